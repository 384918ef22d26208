#!/bin/sh
# Any process may bind an abstract socket name: one that is not allowed
# to bind a privileged port, holding itapi-emul/<port> below the host's
# unprivileged start, never gets a connect's request (issue 56, point 4).
# The squatter runs as nobody (uid 65534) and reports how many bytes of
# a request it read; itapi-perf, as root, connects to that port over
# emul0 and must be refused with the log line that names the squatter.
# Needs root and setpriv (util-linux): else skipped (77).
# Usage: privileged-squat.sh ITAPI-PERF PYTHON PORT
set -u
PERF=$1 PY=$2 PORT=$3
[ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null && [ -x "$PY" ] ||
  { echo "SKIP: needs root, setpriv and $PY"; exit 77; }
start=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start 2>/dev/null || echo 1024)
[ "$PORT" -lt "$start" ] || { echo "SKIP: port $PORT is not below the unprivileged start $start"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
cat >"$dir/squat.py" <<'PYEOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(b"\0itapi-emul/" + sys.argv[1].encode())
s.listen(4)
print("bound", flush=True)
s.settimeout(float(sys.argv[2]))
try:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        n = len(c.recv(65536))
    except socket.timeout:
        n = 0
    print("read", n, flush=True)
except socket.timeout:
    print("read", 0, flush=True)
PYEOF
setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" "$dir/squat.py" "$PORT" 10 >"$dir/squat.log" 2>&1 &
sq=$!
for i in $(seq 50); do grep -q bound "$dir/squat.log" && break; sleep 0.1; done
grep -q bound "$dir/squat.log" || { cat "$dir/squat.log"; echo "FAIL: the squatter did not bind"; exit 1; }
ITAPI_PROVIDER=emul timeout 30 "$PERF" -c 127.0.0.1 -p "$PORT" -t send_lat -n 10 >"$dir/client.log" 2>&1
rc=$?
wait $sq
cat "$dir/client.log" "$dir/squat.log"
[ $rc -ne 0 ] || { echo "FAIL: the client connected to the squatter"; exit 1; }
grep -q "(uid 65534) answers on privileged port $PORT without CAP_NET_BIND_SERVICE" "$dir/client.log" ||
  { echo "FAIL: the client's log does not name the squatter"; exit 1; }
grep -q '^read 0$' "$dir/squat.log" ||
  { echo "FAIL: the squatter read a request"; exit 1; }
echo "ok: a squatter on itapi-emul/$PORT got no request"
