# vp/iwarp/tests/wire_lib.sh: capture loopback iWARP traffic and check it
# with Wireshark's dissectors (reference/wire.md 5).  Sourced (POSIX sh) by
# vp/iwarp/tests/wire-test.sh and lab/siw-interop.sh.
#
#   wire_capture PORT PCAP   start dumpcap on lo for tcp port PORT into
#                            PCAP; sets wire_cap (its pid); returns 1 (with
#                            dumpcap's words on stdout) when it cannot
#   wire_stop                stop that capture and wait for the file;
#                            sets wire_dropped: the packets dumpcap says it
#                            dropped (a capture that dropped one may miss
#                            an MPA Request, and then a whole stream goes
#                            undecoded: it judges nothing)
#   wire_decode PCAP CRC OPS...
#                            decode PCAP: the MPA Request and Reply, each
#                            RDMAP opcode of OPS ("0x03:Send"...), no
#                            malformed frame, no bad CRC32, and with CRC=1 a
#                            good CRC32 on every FPDU.  Prints a line of
#                            counts (and what is missing); returns 1 on a
#                            fault.  Sets wire_fpdus and wire_good.
#
# POSIX sh has no local variables: wire_cap, wire_file, wire_dropped,
# wire_fpdus, wire_good and the names starting with _ are the library's.
#
# SPDX-License-Identifier: MIT

# Not iWARP: these heuristics would claim our Sends.
wire_noheur="--disable-heuristic rpcrdma_iwarp --disable-heuristic smb_direct_iwarp"

wire_capture() {
  wire_file=$2
  # A 64 MiB buffer: on a loaded host the default (2 MiB) fills while
  # dumpcap waits for the CPU, and packets are dropped.
  dumpcap -q -B 64 -i lo -f "tcp port $1" -w "$2" 2>"$2.dumpcap" &
  wire_cap=$!
  for _ in $(seq 1 50); do
    grep -q Capturing "$2.dumpcap" 2>/dev/null && break
    [ -s "$2" ] && break
    sleep 0.1
  done
  kill -0 $wire_cap 2>/dev/null && return 0
  cat "$2.dumpcap"
  return 1
}

wire_stop() {
  sleep 0.5 # the last segments and FINs
  kill -INT $wire_cap 2>/dev/null
  wait $wire_cap 2>/dev/null
  wire_dropped=$(sed -n 's|.*received/dropped on interface.*: [0-9]*/\([0-9]*\) .*|\1|p' "$wire_file.dumpcap" | head -n 1)
  wire_dropped=${wire_dropped:-0}
}

wire_decode() {
  _f=$1 _crc=$2 _bad=0
  shift 2
  tshark -r "$_f" $wire_noheur -Y iwarp_mpa >"$_f.sum" 2>&1
  for _w in "MPA Request Frame" "MPA Reply Frame"; do
    grep -q "$_w" "$_f.sum" || { echo "  no '$_w' decoded"; _bad=1; }
  done
  # One TCP segment may carry several FPDUs: list the RDMAP opcode of
  # every FPDU, not one per frame.
  tshark -r "$_f" $wire_noheur -Y iwarp_rdma -T fields -E occurrence=a -E separator=, \
    -e iwarp_rdma.opcode 2>/dev/null | tr ',' '\n' | grep . >"$_f.ops"
  for _op in "$@"; do
    grep -qx "${_op%%:*}" "$_f.ops" || { echo "  no '${_op#*:}' decoded"; _bad=1; }
  done
  tshark -r "$_f" $wire_noheur -V >"$_f.detail" 2>&1
  wire_fpdus=$(grep -c . "$_f.ops")
  wire_good=$(grep -c 'Good CRC32' "$_f.detail")
  _badc=$(grep -c 'Bad CRC32' "$_f.detail")
  _mal=$(grep -c 'Malformed' "$_f.detail")
  echo "  capture: $wire_fpdus FPDUs ($(sort "$_f.ops" | uniq -c |
    awk '{ printf "%s%s x%s", s, $2, $1; s = ", " }')), good CRCs $wire_good, bad CRCs $_badc, malformed $_mal"
  [ "$_badc" -eq 0 ] && [ "$_mal" -eq 0 ] || _bad=1
  if [ "$_crc" = 1 ] && [ "$wire_good" -ne "$wire_fpdus" ]; then
    echo "  $wire_fpdus FPDUs but $wire_good good CRCs"
    _bad=1
  fi
  return $_bad
}
