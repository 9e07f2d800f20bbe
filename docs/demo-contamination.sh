# Contamination scan on the sample: flag, review, clean. ($SD = sealdesk --workspace $DEMO;
# rita is enrolled as reviewer with the key $DEMO/keys/rita.)

# 1. Scan: exact 13-gram Jaccard and containment, internal duplicates, embeddings
#    (threshold calibrated on sample_data/contamination/calibration.jsonl).
$SD scan contamination \
    --eval sample_data/contamination/eval.jsonl --text-field question --id-field id \
    --pool sample_data/contamination/pool.jsonl --pool-text-field text

# 2. The reviewer's decisions (the app does the same with one key each):
#    accept the n-gram and containment hits as confirmed leaks ...
$SD items --queue flagged_pairs --json \
  | python3 -c 'import json,sys; [print(i["item_id"]) for i in json.load(sys.stdin) if {"ngram","containment"} & set(i["tags"])]' \
  | $SD decide --queue flagged_pairs --item - --decision accept --note "copied from the pool" --key $DEMO/keys/rita
#    ... and keep the rest (paraphrases and number-changed siblings) after a look.
$SD items --queue flagged_pairs --status undecided --json \
  | python3 -c 'import json,sys; [print(i["item_id"]) for i in json.load(sys.stdin)]' \
  | $SD decide --queue flagged_pairs --item - --decision reject --note "reviewed: kept" --key $DEMO/keys/rita

# 3. The clean eval set, its new content hash, and the power it leaves.
$SD contamination clean --out $DEMO/clean_eval.jsonl

# 4. The speed claim, small enough for a demo (the README has 100k and 1M figures).
$SD bench contamination --pool-size 5000 --eval-size 1319
