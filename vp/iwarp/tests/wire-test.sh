#!/bin/sh
# Capture a vp/iwarp transfer on loopback and check every FPDU with
# Wireshark's iWARP dissectors (reference/wire.md 5): MPA request and reply,
# the RTR, Send / Write / Read Request / Read Response and the RFC 7306
# Atomic Request / Response and Immediate Data, all with good CRCs.
# Skips (77) without tshark/dumpcap or capture rights.
set -u
PAIR=$1
PORT=$2
. "$(dirname "$0")/wire_lib.sh"
command -v tshark >/dev/null 2>&1 || { echo "tshark missing: skip"; exit 77; }
command -v dumpcap >/dev/null 2>&1 || { echo "dumpcap missing: skip"; exit 77; }
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
# A capture that dropped packets judges nothing (wire_stop): taken again,
# once.
for try in 1 2; do
  rm -f "$DIR"/cap.pcapng*
  wire_capture "$PORT" "$DIR/cap.pcapng" || { echo "dumpcap cannot capture on lo: skip"; exit 77; }
  sleep 0.5
  # Once with the default FPDU size (the path's MULPDU: one FPDU per message
  # here), once with small FPDUs (messages cut into many segments).
  ITAPI_IWARP_CRC=1 "$PAIR" transfer "$PORT" || { wire_stop; exit 1; }
  ITAPI_IWARP_CRC=1 ITAPI_IWARP_FPDU_MAX=1024 "$PAIR" transfer "$PORT" || { wire_stop; exit 1; }
  # And with the RFC 7306 option at both ends: an Atomic Request and
  # Response for each of Fetch and Add and Compare and Swap.
  ITAPI_IWARP_CRC=1 ITAPI_IWARP_RFC7306=1 "$PAIR" transfer "$PORT" || { wire_stop; exit 1; }
  wire_stop
  [ "$wire_dropped" -eq 0 ] && break
  echo "  the capture dropped $wire_dropped packet(s) (try $try of 2)"
done
[ "$wire_dropped" -eq 0 ] || { echo "dumpcap dropped packets twice on this loaded host: skip"; exit 77; }
fail=0
wire_decode "$DIR/cap.pcapng" 1 0x03:Send 0x00:Write 0x01:"Read Request" 0x02:"Read Response" \
  0x0a:"Atomic Request" 0x0b:"Atomic Response" 0x08:"Immediate Data" \
  0x09:"Immediate Data with SE" || fail=1
cat "$DIR/cap.pcapng.sum"
[ "$wire_good" -ge 30 ] || { echo "FAIL: too few FPDUs with a checked CRC"; fail=1; }
exit $fail
