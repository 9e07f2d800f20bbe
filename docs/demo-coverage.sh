# Coverage (seed 002): a sealed, signed benchmark of a prompt-injection detector,
# the weak categories it finds, their attributed misses as a review backlog,
# signed reviews, and the lead-approved evidence. Run from the repository root
# after the demo workspace and keys exist ($SD, $DEMO, $DEMO/keys/{rita,lena}).
COV="$DEMO/coverage"
V1=55c80d5d9e0d82337ab555b17e8505febf5e680758e1dd23ca7239e571eb1130   # stand-in digest of detector v1
V2=5642865473cf347f2c19ed920c162cf41c08e258c2452abfe33cc7db0606737c   # stand-in digest of detector v2
mkdir -p "$COV"
# The three authorities' keys are made here, never committed.
$SD coverage keygen --trust-root "$COV/trust" --keys "$COV/private"
cp sample_data/coverage/holdout.json "$COV/holdout.json"
$SD coverage sign --role holdout --key "$COV/private/holdout.key" --trust-root "$COV/trust" "$COV/holdout.json"
$SD coverage store-init --store "$COV/lineage.db" --store-id demo-lineage
# Genesis: the approved baseline detector v1, explicitly scoped with no prior baseline.
$SD coverage scope --template sample_data/coverage/scope-genesis.toml --holdout "$COV/holdout.json" --genesis --expires-in 30d --out "$COV/scope-genesis.json"
$SD coverage sign --role scope --key "$COV/private/scope.key" "$COV/scope-genesis.json"
$SD coverage benchmark --trust-root "$COV/trust" --holdout "$COV/holdout.json" --scope "$COV/scope-genesis.json" \
    --predictions sample_data/coverage/predictions_v1.jsonl --candidate-sha256 $V1 --candidate-version v1 \
    --store "$COV/lineage.db" --store-id demo-lineage --benchmark-key "$COV/private/benchmark.key" --out "$COV/baseline.json"
# The candidate v2 against that baseline: HOLD with low_recall, recall_regression, high_fpr.
$SD coverage scope --template sample_data/coverage/scope-candidate.toml --holdout "$COV/holdout.json" --baseline "$COV/baseline.json" --expires-in 30d --out "$COV/scope.json"
$SD coverage sign --role scope --key "$COV/private/scope.key" "$COV/scope.json"
$SD coverage benchmark --trust-root "$COV/trust" --holdout "$COV/holdout.json" --scope "$COV/scope.json" \
    --baseline "$COV/baseline.json" --predictions sample_data/coverage/predictions_v2.jsonl \
    --candidate-sha256 $V2 --candidate-version v2 --store "$COV/lineage.db" --store-id demo-lineage \
    --benchmark-key "$COV/private/benchmark.key" --out "$COV/benchmark.json"
# A second genesis for the same policy and holdout is refused (exit 3).
if $SD coverage benchmark --trust-root "$COV/trust" --holdout "$COV/holdout.json" --scope "$COV/scope-genesis.json" \
    --predictions sample_data/coverage/predictions_v1.jsonl --candidate-sha256 $V1 --candidate-version v1 \
    --store "$COV/lineage.db" --store-id demo-lineage --benchmark-key "$COV/private/benchmark.key"; then
    echo "a second genesis was accepted" >&2; exit 1
else
    echo "second genesis refused, as it must be"
fi
# Debug backlog: misses from the debug rows (never the holdout), attributed by
# integrated gradients on a tiny classifier trained here in seconds.
$SD coverage tiny-model --rows sample_data/coverage/debug_rows.jsonl --out "$COV/model"
$SD coverage backlog --benchmark "$COV/benchmark.json" --trust-root "$COV/trust" \
    --rows sample_data/coverage/debug_rows.jsonl --policy sample_data/coverage/attribution.toml \
    --model "$COV/model" | tee "$COV/backlog.txt"
# Rita reviews each weak category; Lena approves the evidence as lead.
for id in $(grep -E '^wc-' "$COV/backlog.txt" | grep -E ' (benign|context_manipulation):' | cut -d' ' -f1); do
    $SD decide --queue weak_categories --item "$id" --decision accept --note "into the next hardening cycle" --key "$DEMO/keys/rita"
done
for id in $(grep -E '^wc-' "$COV/backlog.txt" | grep ' obfuscation:' | cut -d' ' -f1); do
    $SD decide --queue weak_categories --item "$id" --decision reject --note "already covered by the AID-H-026.002 variant run" --key "$DEMO/keys/rita"
done
$SD coverage evidence --benchmark "$COV/benchmark.json" --trust-root "$COV/trust" --key "$DEMO/keys/lena" --note "HOLD stands; reviews complete"
$SD coverage check-evidence "$(ls "$DEMO"/artifacts/coverage-evidence-*/coverage_evidence.json)" --trust-root "$COV/trust"
$SD verify
