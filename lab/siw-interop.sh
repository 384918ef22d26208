#!/usr/bin/env bash
# lab/siw-interop.sh: vp/iwarp on this host against Linux siw in the lab VM,
# with rdma-core's own rping on the siw side and itapi-rping (an IT-API
# application speaking rping's protocol) on ours.  Every ping is an
# untagged Send each way, an RDMA Read Request/Response and an RDMA Write,
# and both programs check the bytes.  Each case boots the VM once:
#
#   siw-passive      siw listens (rping -s), vp/iwarp is the MPA initiator
#   siw-active       vp/iwarp listens (itapi-rping -s), siw initiates
#   ...-crc          the same with ITAPI_IWARP_CRC=1 on our side: siw
#                    honours or accepts the CRC, and every FPDU carries one
#   ...-big          60,000-byte pings: siw cuts its Writes and Read
#                    Responses to FPDUs of its 1460-byte MSS, ours are up
#                    to 64 KiB and qemu cuts them again
#   ...-srq          our side takes its receives from a shared receive
#                    queue (itapi-rping --srq): siw's Sends land in it
#   ib-pingpong      vp/ib on siw0 in the VM (doc/examples' itapi-pingpong
#                    -l, an IT-API application) serves vp/iwarp on this host
#                    (itapi-pingpong -c): 40 round trips of 64 KiB Sends,
#                    after which our side disconnects at once; both check
#                    every byte, and siw's last Send must complete without
#                    error.  Run LAB_PINGPONG_RUNS times (10) in one boot: it
#                    failed 1 run in 2 when our FIN could reach siw while it
#                    still sent that Send (doc/provider-iwarp.md, "A FIN
#                    while siw still sends"), and 1 run in 60 when siw's
#                    stale answer to our close fence came in pieces
#                    (/iwarp/hostile/cm/close-fence-stale-pieces)
#   siw-inval-ours   vp/iwarp fast-registers a region and advertises its
#                    STag; siw (vp/ib in the VM, siw active) RDMA-Writes it
#                    and sends a Send with Invalidate naming it; a later
#                    RDMA Read of it by siw fails (tests/app/itapi_inval.c)
#   siw-inval-theirs siw's region (registered: siw has no fast
#                    registration from user space) is invalidated by our
#                    Send with Invalidate (siw passive); a later RDMA Write
#                    of ours to it fails
#
# The host's loopback is captured (dumpcap) and decoded with tshark: the
# MPA Request and Reply, the four RDMAP opcodes (ib-pingpong: Sends, and
# the Read Request and Response of each close), no malformed frame, no bad
# CRC, and in the CRC cases a good CRC on every FPDU.  The siw-inval cases
# run our IT-API program on both sides (the VM shares the build tree) and
# check on the wire the Send with Invalidate's Invalidate STag, the one
# advertised, and the one Terminate the dead access draws: RDMAP remote
# protection, invalid STag (0/1/0x00) from us for siw's Read; DDP tagged
# buffer, invalid STag (1/1/0x00) from siw for our Write.
#
#   lab/siw-interop.sh [--build DIR] [-C pings] [case...]
#
# A case that fails is run once more (said on its own line) and fails
# only if it fails again: see the loop below for why.  ib-pingpong is not:
# it counts a flake.  LAB_KEEP=DIR keeps every case's captures and both
# sides' output in DIR.
#
# Needs lab/build-initrd.sh run once, qemu-system-x86, tshark.  Prints a
# TAP line per case ("ok 1 - siw-passive") and "siw-interop: N passed, N
# failed (N case(s) run twice)"; exits 0 when all passed, 77 when the lab cannot run here (no VM
# image, a missing tool), 1 otherwise.  Meson runs it as the test
# siw-interop (suites interop and slow).
#
# SPDX-License-Identifier: MIT
set -uo pipefail
lab=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$lab/.." && pwd)
cache=${LAB_CACHE:-$lab/cache}
build=$root/build count=5
# Stock siw sends its MPA Reply before it reads the socket: our first FPDU
# waits this long (doc/provider-iwarp.md, "The accept race of stock siw";
# LAB_HOLD_MS=0 shows the hang).
hold=${LAB_HOLD_MS:-500}
while [ $# -gt 0 ]; do
  case $1 in
  --build) build=$2; shift 2 ;;
  -C) count=$2; shift 2 ;;
  -*) sed -n '2,42p' "$0" >&2; exit 2 ;;
  *) break ;;
  esac
done
cases=("$@")
[ ${#cases[@]} -gt 0 ] ||
  cases=(siw-passive siw-active siw-passive-crc siw-active-crc siw-passive-big siw-active-big
         siw-passive-srq siw-active-srq ib-pingpong siw-inval-ours siw-inval-theirs)
rping=$build/tools/rping/itapi-rping pingpong=$build/doc/itapi-pingpong
inval=$build/tests/app/itapi-inval
runs=${LAB_PINGPONG_RUNS:-10}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "siw-interop: skipped: no build directory $build"; exit 77; }
# ib-pingpong shares the tree with the VM (vp/ib and the example run there).
case $build/ in "$root"/*) share=$root ;; *) share=$build ;; esac
. "$root/vp/iwarp/tests/wire_lib.sh"
skip() { echo "siw-interop: skipped: $*"; exit 77; }
[ -x "$rping" ] || skip "no $rping (build the project first)"
# The siw-inval cases need vp/ib (libibverbs-dev, librdmacm-dev) and
# itapi-inval: without them they are left out, and said so.
if [ ! -f "$build/vp/ib/libitapi-ib.so" ] || [ ! -x "$inval" ]; then
  kept=()
  for c in "${cases[@]}"; do
    case $c in
    siw-inval-*) echo "siw-interop: $c left out: no vp/ib module or itapi-inval in $build" ;;
    *) kept+=("$c") ;;
    esac
  done
  cases=("${kept[@]}")
fi
[ -f "$cache/initrd.img" ] || skip "no lab VM image: run lab/build-initrd.sh"
for t in qemu-system-x86_64 tshark dumpcap; do command -v $t >/dev/null || skip "$t is missing"; done

# One interop run at a time: two emulated VMs beside the host's suites
# starve each other (a siw Write then misses its 120 s).  The other waits.
exec 9>"$cache/interop.lock"
flock 9 || echo "siw-interop: cannot lock $cache/interop.lock; running beside the other lab test" >&2

# LAB_KEEP=DIR keeps each case's captures and both programs' output
# there (a failure's evidence); without it they go with the run.
tmp=$(mktemp -d)
trap 'if [ -n "${LAB_KEEP:-}" ]; then mkdir -p "$LAB_KEEP" && cp -a "$tmp"/. "$LAB_KEEP"/; fi
      rm -rf "$tmp"; kill $(jobs -p) 2>/dev/null' EXIT
# The VM as this test was written for: siw0 on eth0 only, no shared tree
# (the lab's default adds rxe0 and 9p, which only lengthen the boot).
vmargs=(-S -k lab.rdma=siw0:eth0)
export ITAPI_PROVIDER=iwarp
pass=0 fail=0 n=0 retried=0
hport=$(( 21000 + $$ % 8000 ))

# ib-pingpong: $runs servers in turn in one VM, each answered by a client
# here; every run's two programs must end well.  Sets vm and host (exit
# statuses: 0 when every run did).
pingpong_runs() {
  local env="ITAPI_PROVIDER_PATH=$build/vp/ib/libitapi-ib.so ITAPI_PROVIDER=ib" i good
  local ready="$build/.siw-interop-ready-$$" pp="$pingpong -t send -n 40 -s 65536"
  rm -f "$ready".*
  "$lab/run.sh" -q -s "$share" -k lab.rdma=siw0:eth0 -t $((120 + 60 * runs)) -f "tcp:127.0.0.1:$hport-:7174" \
    "for i in \$(seq 1 $runs); do $env timeout 60 $pp -l -p 7174 -i siw0 >/tmp/srv 2>&1 & s=\$!; n=0;
       until rdma res show cm_id | grep -q 'LISTEN.*src-addr [^ ]*:7174 '; do
         n=\$((n + 1)); [ \$n -lt 600 ] && kill -0 \$s || break; sleep 0.2; done;
       touch $ready.\$i; wait \$s; st=\$?; echo LAB-RUN \$i \$st; [ \$st -eq 0 ] || cat /tmp/srv; done" \
    >"$tmp/$c.vm" 2>&1 &
  vm=$!
  host=0
  for ((i = 1; i <= runs; i++)); do
    until [ -e "$ready.$i" ] || ! kill -0 $vm 2>/dev/null; do sleep 0.2; done
    kill -0 $vm 2>/dev/null || break
    ITAPI_IWARP_FIRST_FPDU_DELAY_MS=$hold timeout 60 $pp -c 127.0.0.1 -p $hport >"$tmp/$c.host.$i" 2>&1 ||
      { host=1; echo "    run $i: our side (itapi-pingpong -c) failed:"; tail -3 "$tmp/$c.host.$i" | sed 's/^/      /'; }
  done
  wait $vm; vm=$?
  rm -f "$ready".*
  good=$(grep -c '^LAB-RUN [0-9]* 0$' "$tmp/$c.vm")
  echo "    $good of $runs runs ended well on siw's side"
  [ "$good" -eq "$runs" ] || { vm=1; grep -v '^LAB-RUN [0-9]* 0$' "$tmp/$c.vm" | tail -12 | sed 's/^/      /'; }
  cat "$tmp/$c.host".* >"$tmp/$c.host" 2>/dev/null
}

# The Send with Invalidate and the Terminate of a siw-inval capture:
# every Send with Invalidate names STAG (hex), and exactly one Terminate
# says TERM (layer/type/code in hex).
inval_wire() {
  local f=$1 stag=$((16#${2#0x})) term=$3 got bad=0
  got=$(tshark -r "$f" $wire_noheur -Y 'iwarp_rdma.opcode == 0x04' -T fields -E occurrence=a \
    -E aggregator=' ' -e iwarp_rdma.inval_stag 2>/dev/null | tr ' ' '\n' | grep . | sort | uniq -c |
    awk '{ printf "%s%s x%s", s, $2, $1; s = ", " }')
  echo "  Send with Invalidate: Invalidate STag ${got:-none} (decimal), advertised $stag"
  [ "$got" = "$stag x1" ] || bad=1
  # One field per layer in tshark: the empty ones go.
  got=$(tshark -r "$f" $wire_noheur -Y 'iwarp_rdma.opcode == 0x07' -T fields -E separator=, \
    -e iwarp_rdma.term_layer -e iwarp_rdma.term_etype_rdma -e iwarp_rdma.term_etype_ddp \
    -e iwarp_rdma.term_errcode_rdma -e iwarp_rdma.term_errcode_ddp_tagged 2>/dev/null |
    sed 's/,,*/,/g; s/,$//; s|,|/|g; s/0x0*\([0-9a-f]\)/0x\1/g')
  echo "  Terminate (layer/type/code): ${got:-none}, expected $term"
  [ "$got" = "$term" ] || bad=1
  return $bad
}

# A siw-inval case: itapi-inval on both sides, vp/ib on siw0 in the VM.
inval_case() {
  local c=$1 share vmenv i
  vmenv="ITAPI_PROVIDER_PATH=$build/vp/ib/libitapi-ib.so ITAPI_PROVIDER=ib"
  case $build/ in "$root"/*) share=$root ;; *) share=$build ;; esac
  case $c in
  siw-inval-ours)
    # siw's Read of the dead STag draws our Terminate; siw then reports
    # the connection's end as an orderly DISCONNECTED (siw0.txt) and
    # flushes the Read.
    "$inval" -s -r owner -p $hport -i iwarp0 -A IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION -T 240 \
      >"$tmp/$c.host" 2>&1 &
    host=$!
    "$lab/run.sh" -q -s "$share" -t 240 -k lab.rdma=siw0:eth0 \
      "$vmenv $inval -c -r invalidator -a 10.0.2.2 -p $hport -i siw0 -x read \
       -E IT_DTO_ERR_FLUSHED -X IT_CM_MSG_CONN_DISCONNECT_EVENT -T 120" >"$tmp/$c.vm" 2>&1
    vm=$?
    term=0x0/0x1/0x0 ;;
  siw-inval-theirs)
    # siw invalidates any region of the queue pair's domain
    # (siw_invalidate_stag), but libsiw's poll_cq clears wc_flags, so the
    # owner's receive cannot name it (-u).  Our Write waits for placement
    # (ITAPI_IWARP_COMPLETION=placed) so that siw's Terminate fails it;
    # siw's own consumer learns of the dead access as verbs' QP_ACCESS_ERR,
    # which names no operation (LOCAL_ACCESS_VIOLATION through vp/ib).
    "$lab/run.sh" -q -s "$share" -t 240 -k lab.rdma=siw0:eth0 -f "tcp:127.0.0.1:$hport-:7175" \
      "$vmenv $inval -s -r owner -p 7175 -i siw0 -u -A IT_ASYNC_AFF_EP_LOCAL_ACCESS_VIOLATION \
       -X IT_CM_MSG_CONN_DISCONNECT_EVENT,IT_CM_MSG_CONN_BROKEN_EVENT -T 120 & s=\$!;
       i=0; until rdma res show cm_id | grep -q 'LISTEN.*src-addr 10.0.2.15:7175 '; do
         i=\$((i + 1)); [ \$i -lt 120 ] && kill -0 \$s || break; sleep 1; done;
       echo LAB-LISTENING; wait \$s" >"$tmp/$c.vm" 2>&1 &
    vm=$!
    for ((i = 0; i < 220; i++)); do
      grep -q '^LAB-LISTENING' "$tmp/$c.vm" 2>/dev/null || ! kill -0 $vm 2>/dev/null && break
      sleep 1
    done
    ITAPI_IWARP_FIRST_FPDU_DELAY_MS=$hold ITAPI_IWARP_COMPLETION=placed \
      "$inval" -c -r invalidator -a 127.0.0.1 -p $hport -i iwarp0 -x write \
      -A IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION -T 60 >"$tmp/$c.host" 2>&1 &
    host=$!
    wait $vm; vm=$?
    term=0x1/0x1/0x0 ;;
  esac
}

# One case: sets ok (1: passed) and sides (1: both programs did their
# part; only the capture can have failed).
one_case() {
  c=$1
  hport=$((hport + 1)); size=64 crc=0 srq=()
  case $c in *-crc) crc=1 ;; esac
  case $c in *-srq) srq=(--srq) ;; esac
  case $c in *-big) size=60000 ;; esac
  wire_capture $hport "$tmp/$c.pcapng" >"$tmp/$c.dumpcap.err" ||
    skip "dumpcap cannot capture on lo: $(cat "$tmp/$c.dumpcap.err")"
  case $c in
  ib-pingpong) echo "  $c: $runs runs of 40 round trips of 65536 bytes" ;;
  siw-inval-*) echo "  $c: itapi-inval on both sides, vp/ib on siw0" ;;
  *) echo "  $c: $count pings of $size bytes, CRC $crc${srq:+, our receives from an SRQ}" ;;
  esac
  case $c in
  ib-pingpong)
    pingpong_runs
    wire_stop
    ok=$((vm == 0 && host == 0)) sides=$((vm == 0 && host == 0))
    wire_decode "$tmp/$c.pcapng" 0 0x03:Send 0x01:"Read Request" 0x02:"Read Response" \
      >"$tmp/$c.decode" || ok=0
    sed 's/^/  /' "$tmp/$c.decode"
    return ;;
  siw-inval-*)
    inval_case "$c" ;;
  siw-passive*)
    # The host connects through qemu's forward only once rping listens
    # (`rdma res show cm_id` in the VM lists siw's listener, and the VM
    # prints LAB-LISTENING on its console).  Connects forwarded while the
    # VM booted left half-open streams on siw's listener, and Debian 6.1's
    # siw then freed the listening endpoint while it was still listed: the
    # listener refused every later connect (CI, under load; the same bug
    # as lab/ib-interop.sh cross-passive).
    "$lab/run.sh" "${vmargs[@]}" -q -t 240 -f "tcp:127.0.0.1:$hport-:7174" \
      "rping -s -a 10.0.2.15 -p 7174 -C $count -S $size -V -v & s=\$!; i=0;
       until rdma res show cm_id | grep -q 'LISTEN.*src-addr 10.0.2.15:7174 '; do
         i=\$((i + 1)); [ \$i -lt 120 ] && kill -0 \$s || break; sleep 1; done;
       echo LAB-LISTENING; wait \$s" >"$tmp/$c.vm" 2>&1 &
    vm=$!
    local i
    for ((i = 0; i < 220; i++)); do
      grep -q '^LAB-LISTENING' "$tmp/$c.vm" 2>/dev/null || ! kill -0 $vm 2>/dev/null && break
      sleep 1
    done
    ITAPI_IWARP_FIRST_FPDU_DELAY_MS=$hold ITAPI_IWARP_CRC=$crc "$rping" -c -a 127.0.0.1 -p $hport -C $count -S $size -v -T 60 "${srq[@]}" \
      >"$tmp/$c.host" 2>&1 &
    host=$!
    wait $vm; vm=$? ;;
  siw-active*)
    ITAPI_IWARP_CRC=$crc "$rping" -s -a 127.0.0.1 -p $hport -C $count -S $size -v -T 240 "${srq[@]}" \
      >"$tmp/$c.host" 2>&1 &
    host=$!
    "$lab/run.sh" "${vmargs[@]}" -q -t 240 "rping -c -a 10.0.2.2 -p $hport -C $count -S $size -V -v" >"$tmp/$c.vm" 2>&1
    vm=$? ;;
  *) echo "siw-interop: unknown case $c" >&2; exit 2 ;;
  esac
  [ $vm -eq 0 ] || kill $host 2>/dev/null # do not wait out its -T
  wait $host; hrc=$?
  wire_stop
  ok=1
  case $c in
  siw-inval-*)
    [ $vm -eq 0 ] || { echo "    siw side (itapi-inval, vp/ib) failed with status $vm:"; sed 's/^/      /' "$tmp/$c.vm" | tail -12; ok=0; }
    [ $hrc -eq 0 ] || { echo "    our side (itapi-inval) failed with status $hrc:"; sed 's/^/      /' "$tmp/$c.host" | tail -12; ok=0; }
    grep -h '^itapi-inval: [a-z]*: ' "$tmp/$c.host" "$tmp/$c.vm" | grep -v listening | sed 's/^/    /'
    sides=$ok
    local stag
    stag=$(sed -n 's/^itapi-inval: stag \(0x[0-9a-f]*\)$/\1/p' "$tmp/$c.host" | head -1)
    wire_decode "$tmp/$c.pcapng" 0 0x03:Send 0x00:Write 0x04:"Send with Invalidate" \
      0x07:Terminate >"$tmp/$c.decode" || ok=0
    inval_wire "$tmp/$c.pcapng" "${stag:-0x0}" "$term" >>"$tmp/$c.decode" || ok=0
    sed 's/^/  /' "$tmp/$c.decode"
    return ;;
  esac
  [ $vm -eq 0 ] || { echo "    siw side (rping) failed with status $vm:"; sed 's/^/      /' "$tmp/$c.vm" | tail -8; ok=0; }
  [ $hrc -eq 0 ] || { echo "    our side (itapi-rping) failed with status $hrc:"; sed 's/^/      /' "$tmp/$c.host" | tail -8; ok=0; }
  pings=$(grep -c 'ping data: rdma-ping-' "$tmp/$c.vm")
  [ $vm -ne 0 ] || [ "$pings" -eq "$count" ] || { echo "    rping printed $pings pings of $count"; ok=0; }
  sides=$ok
  tail -1 "$tmp/$c.host" | sed 's/^/    /'
  wire_decode "$tmp/$c.pcapng" $crc 0x03:Send 0x00:Write 0x01:"Read Request" \
    0x02:"Read Response" >"$tmp/$c.decode" || ok=0
  sed 's/^/  /' "$tmp/$c.decode"
}

# With LAB_KEEP, each run of a case keeps its files in a directory of its
# own (a retry would overwrite the failure's).
keep_n=0
keep_run() {
  [ -n "${LAB_KEEP:-}" ] || return 0
  keep_n=$((keep_n + 1))
  mkdir -p "$tmp/$keep_n-$1" && mv "$tmp/$1".* "$tmp/$keep_n-$1"/ 2>/dev/null
}

for c in "${cases[@]}"; do
  if [ "$c" = ib-pingpong ] && [ ! -f "$build/vp/ib/libitapi-ib.so" ]; then
    n=$((n + 1)) pass=$((pass + 1))
    echo "ok $n - $c # SKIP no vp/ib module in $build (libibverbs-dev, librdmacm-dev)"
    continue
  fi
  one_case "$c"
  keep_run "$c"
  # A case that failed runs once more, and fails only if it fails again.
  # Two failures seen on a loaded host (CI's suites beside the VM, or
  # busy loops) were not the protocol's: both sides moved and checked
  # every byte but dumpcap saved nothing; and siw's RDMA Write of a
  # 60000-byte ping stopped after its first FPDU for 120 s (the capture
  # shows the sender, siw under the emulated CPU, stopped, not our
  # receiver).  Each retry is printed, with what dumpcap said.
  if [ $ok = 0 ] && [ "$c" != ib-pingpong ]; then
    [ $sides = 1 ] && [ "${wire_fpdus:-0}" = 0 ] &&
      echo "    the capture is empty; dumpcap said: $(tr '\n' ' ' <"$tmp/$c.pcapng.dumpcap")"
    echo "    $c failed: once more"
    retried=$((retried + 1))
    one_case "$c"
    keep_run "$c"
  fi
  n=$((n + 1))
  if [ $ok = 1 ]; then pass=$((pass + 1)); echo "ok $n - $c"; else fail=$((fail + 1)); echo "not ok $n - $c"; fi
done
echo "siw-interop: $pass passed, $fail failed ($retried case(s) run twice)"
[ $fail -eq 0 ]
