# make demo: the review app (issue 6). Uses $SD (= sealdesk --workspace $DEMO) and $DEMO.
# In a terminal the demo ends inside the app, signed in as rita (reviewer);
# without one (CI, a pipe) it prints what the engine produced and exits 0.
if [ -t 0 ] && [ -t 1 ]; then
    echo "opening the review app as rita (reviewer): a accept, x reject, space skip,"
    echo "u undo, ? every key, q quit. Then: $SD verify"
    echo "(the lead signs off in the app too: $SD review --key $DEMO/keys/lena, then S)"
    $SD review --key "$DEMO/keys/rita"
    $SD verify
else
    echo "no terminal, so not opening the review app; what the engine produced:"
    $SD items
    echo "to review: $SD review --key $DEMO/keys/rita   (or --read-only to browse)"
fi
