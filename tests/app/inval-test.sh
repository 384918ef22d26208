#!/bin/sh
# itapi-inval's two roles in two processes over one interface: the owner
# listens (a port the interface picks), the invalidator connects.  Both
# check their side (tests/app/itapi_inval.c); the test passes when both
# exit 0.
#   inval-test.sh ITAPI-INVAL DEVICE read|write
# The dead access fails with REMOTE_ACCESS at the invalidator, whose
# connection then breaks with the peer's report; the owner's breaks with
# its own access violation.  A Write completes REMOTE_ACCESS only where
# its completion waits for placement (ITAPI_IWARP_COMPLETION=placed on
# iwarp0): an iWARP Write otherwise completes once the stream took it.
set -u
app=$1 dev=$2 access=$3
dir=$(mktemp -d) || exit 1
srv=
trap 'kill $srv 2>/dev/null; rm -rf "$dir"' EXIT
case $access in
read) own=IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION ;;
write) own=IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION ;;
*) echo "inval-test.sh: read or write, not $access" >&2; exit 2 ;;
esac
"$app" -s -r owner -p 0 -i "$dev" -A $own -T 20 >"$dir/owner" 2>&1 &
srv=$!
i=0
until grep -q 'listening' "$dir/owner" 2>/dev/null; do
  if ! kill -0 $srv 2>/dev/null || [ $i -ge 300 ]; then
    echo "FAIL: the owner did not listen on $dev:"; cat "$dir/owner"; exit 1
  fi
  i=$((i + 1)); sleep 0.1
done
port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$dir/owner")
"$app" -c -r invalidator -x "$access" -p "$port" -i "$dev" -A IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION \
  -T 20 >"$dir/invalidator" 2>&1
irc=$?
wait $srv
orc=$?
srv=
echo "--- owner (exit $orc)"; cat "$dir/owner"
echo "--- invalidator (exit $irc)"; cat "$dir/invalidator"
[ $orc -eq 0 ] && [ $irc -eq 0 ]
