# A sharded pool: the sample pool cut into three shards (one gzipped), scanned shard by
# shard, then on a local Ray of 2 CPUs when Ray is installed (sealdesk[ray]). It goes to a
# workspace of its own, so that the contamination demo's queue stays as it was.
# ($DEMO is the demo directory; `sealdesk` is on the PATH.)
mkdir -p $DEMO/shards
split -n l/3 -d --additional-suffix=.jsonl sample_data/contamination/pool.jsonl $DEMO/shards/pool-0
gzip -f $DEMO/shards/pool-001.jsonl
sealdesk --workspace $DEMO/sharded init
# 1. Worker processes over the shards: the same pairs as the single-file scan.
sealdesk --workspace $DEMO/sharded scan contamination \
    --eval sample_data/contamination/eval.jsonl --text-field question --id-field id \
    --pool "$DEMO/shards/pool-*" --pool-text-field text --no-embed
# 2. Again: every shard is taken from its record in the workspace, none scanned.
sealdesk --workspace $DEMO/sharded scan contamination \
    --eval sample_data/contamination/eval.jsonl --text-field question --id-field id \
    --pool "$DEMO/shards/pool-*" --pool-text-field text --no-embed
# 3. On Ray (about 10 s to start a local Ray), scanning every shard again.
if python3 -c 'import ray' 2>/dev/null; then
  sealdesk --workspace $DEMO/sharded scan contamination \
      --eval sample_data/contamination/eval.jsonl --text-field question --id-field id \
      --pool "$DEMO/shards/pool-*" --pool-text-field text --no-embed \
      --backend ray --ray-num-cpus 2 --no-resume
fi
