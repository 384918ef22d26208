#!/bin/sh
# Capture a vp/iwarp transfer on loopback and check every FPDU with
# Wireshark's iWARP dissectors (reference/wire.md 5): MPA request and reply,
# the RTR, Send / Write / Read Request / Read Response and the RFC 7306
# Atomic Request / Response, all with good CRCs.
# Skips (77) without tshark/dumpcap or capture rights.
set -u
PAIR=$1
PORT=$2
command -v tshark >/dev/null 2>&1 || { echo "tshark missing: skip"; exit 77; }
command -v dumpcap >/dev/null 2>&1 || { echo "dumpcap missing: skip"; exit 77; }
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
dumpcap -q -i lo -f "tcp port $PORT" -w "$DIR/cap.pcapng" 2>"$DIR/dumpcap.err" &
CAP=$!
# Wait for the capture to start.
for i in $(seq 1 50); do
  grep -q "Capturing" "$DIR/dumpcap.err" 2>/dev/null && break
  [ -s "$DIR/cap.pcapng" ] && break
  sleep 0.1
done
if ! kill -0 $CAP 2>/dev/null; then
  echo "dumpcap cannot capture on lo: skip"; cat "$DIR/dumpcap.err"; exit 77
fi
sleep 0.5
# Once with the default FPDU size (the path's MULPDU: one FPDU per message
# here), once with small FPDUs (messages cut into many segments).
ITAPI_IWARP_CRC=1 "$PAIR" transfer "$PORT" || { kill -INT $CAP; exit 1; }
ITAPI_IWARP_CRC=1 ITAPI_IWARP_FPDU_MAX=1024 "$PAIR" transfer "$PORT" || { kill -INT $CAP; exit 1; }
# And with the RFC 7306 option at both ends: an Atomic Request and Response
# for each of Fetch and Add and Compare and Swap.
ITAPI_IWARP_CRC=1 ITAPI_IWARP_RFC7306=1 "$PAIR" transfer "$PORT" || { kill -INT $CAP; exit 1; }
sleep 0.5
kill -INT $CAP
wait $CAP
NOHEUR="--disable-heuristic rpcrdma_iwarp --disable-heuristic smb_direct_iwarp"
tshark -r "$DIR/cap.pcapng" $NOHEUR -Y iwarp_mpa > "$DIR/summary.txt" 2>&1
cat "$DIR/summary.txt"
fail=0
for want in "MPA Request Frame" "MPA Reply Frame"; do
  grep -q "$want" "$DIR/summary.txt" || { echo "FAIL: no '$want' decoded"; fail=1; }
done
# One TCP segment may carry several FPDUs (a Send and the delivery fence
# behind it): list the RDMAP opcode of every FPDU, not one per frame.
tshark -r "$DIR/cap.pcapng" $NOHEUR -Y iwarp_rdma -T fields -E occurrence=a -E separator=, \
  -e iwarp_rdma.opcode | tr ',' '\n' > "$DIR/ops.txt" 2>&1
for op in 0x03:Send 0x00:Write 0x01:"Read Request" 0x02:"Read Response" 0x0a:"Atomic Request" \
          0x0b:"Atomic Response" 0x08:"Immediate Data" 0x09:"Immediate Data with SE"; do
  grep -qx "${op%%:*}" "$DIR/ops.txt" || { echo "FAIL: no '${op#*:}' decoded"; fail=1; }
done
fpdus=$(grep -c . "$DIR/ops.txt")
tshark -r "$DIR/cap.pcapng" $NOHEUR -V > "$DIR/detail.txt" 2>&1
good=$(grep -c 'Good CRC32' "$DIR/detail.txt")
bad=$(grep -c 'Bad CRC32' "$DIR/detail.txt")
malformed=$(grep -c 'Malformed' "$DIR/detail.txt")
echo "FPDUs: $fpdus, good CRCs: $good, bad CRCs: $bad, malformed: $malformed"
[ "$bad" -eq 0 ] || fail=1
[ "$malformed" -eq 0 ] || fail=1
[ "$good" -ge 30 ] || { echo "FAIL: too few FPDUs with a checked CRC"; fail=1; }
[ "$good" -eq "$fpdus" ] || { echo "FAIL: $fpdus FPDUs but $good good CRCs"; fail=1; }
exit $fail
