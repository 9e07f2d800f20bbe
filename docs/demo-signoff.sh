# Sign-off (docs/README-signoff.md): the remaining items decided, then the lead signs off
# through ssh-agent exactly as over `ssh -A reviewhost`, exports the checkpoint, proves a
# record and checks the workspace against the checkpoint, with sealdesk and with ssh-keygen.
$SD decide --queue adjudication --item cand-demo-1 --decision reject --note "not supported by the context" --key "$DEMO/keys/adam"
$SD decide --queue weak_categories --item weak-demo-obfuscation --decision accept --note "into the hardening backlog" --key "$DEMO/keys/lena"
$SD signoff --summary-only
eval "$(ssh-agent -s)" >/dev/null
ssh-add -q "$DEMO/keys/lena"
$SD signoff --yes
ssh-agent -k >/dev/null
$SD checkpoint export --out "$DEMO/checkpoint.txt"
cat "$DEMO/checkpoint.txt"
$SD prove 1
$SD verify --checkpoint "$DEMO/checkpoint.txt"
awk '/^$/{exit} {print}' "$DEMO/checkpoint.txt" > "$DEMO/checkpoint.note"
sed -n '/^-----BEGIN SSH/,/^-----END SSH/p' "$DEMO/checkpoint.txt" > "$DEMO/checkpoint.note.sig"
ssh-keygen -Y verify -f "$DEMO/trust/allowed_signers" -I lena -n lead@sealdesk -s "$DEMO/checkpoint.note.sig" < "$DEMO/checkpoint.note"
