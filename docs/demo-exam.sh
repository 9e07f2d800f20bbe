# exam: the blind two-lane exam on sample_data/exam (see docs/README-exam.md).
# adam (adjudicator) settles the four abstained candidates; the detector replay then scores PASS.
EX=sample_data/exam
exam_sha() { sha256sum "$1" | cut -c1-64; }
EXAM_IN="--corpus $EX/corpus.jsonl --context $EX/context.jsonl --expected-context-sha256 $(exam_sha $EX/context.jsonl) --lane-a $EX/lane-a.labels.jsonl --lane-b $EX/lane-b.labels.jsonl --labeling-summary $EX/labeling-summary.json --expected-labeling-summary-sha256 $(exam_sha $EX/labeling-summary.json) --votes $EX/votes.jsonl --expected-votes-sha256 $(exam_sha $EX/votes.jsonl) --sweep $EX/sweep.jsonl --expected-sweep-sha256 $(exam_sha $EX/sweep.jsonl)"
$SD exam adjudicate --run-id exam-demo $EXAM_IN
$SD exam queue --run-id exam-demo
$SD exam queue --run-id exam-demo --status undecided | grep -e 'worker queue' -e 'cache service' | cut -f1 | $SD decide --queue adjudication --item - --decision accept --note "asserted as fact about live state / a past action" --key "$DEMO/keys/adam"
$SD exam queue --run-id exam-demo --status undecided | cut -f1 | $SD decide --queue adjudication --item - --decision reject --note "span is not one claim about this entity" --key "$DEMO/keys/adam"
$SD exam resolve --run-id exam-demo --out-run-id exam-demo-final
$SD exam score --run-id exam-demo-final --expected-adjudication-sha256 $(exam_sha "$DEMO/artifacts/exam-demo-final/exam-adjudication.json") $EXAM_IN --replay $EX/replay.jsonl --expected-replay-sha256 $(exam_sha $EX/replay.jsonl)
