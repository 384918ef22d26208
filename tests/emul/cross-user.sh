#!/bin/sh
# shellcheck disable=SC2030,SC2031 # ITAPI_EMUL_CMA is set in the subshell that runs one program, on purpose
# A process of another user shares with its peer the connection's rings and
# nothing else (issue 56, point 3).  As root, beside an unprivileged user
# ($ITAPI_XUSER_NAME, default itapi-xuser, made here when missing):
#
# 1. the cross-process conformance area over emul0 (itapi-certify --filter
#    /conformance/xproc/: Sends, RDMA Writes and Reads, atomics, windows,
#    invalidated keys, freed and foreign regions, every byte checked by the
#    tests) with every child as the user (ITAPI_CONF_CHILD_USER), and with
#    the tests' process as the user and its children as root
#    (ITAPI_CONF_PARENT_USER); each over cross-memory attach where the
#    kernel allows it (root to the user) and over the bounce ring alone
#    (ITAPI_EMUL_CMA=0): the user as child over attach and as parent over
#    the ring alone, or all four pairs with ITAPI_XUSER_ALL=1.  The root
#    end of each pair checks both processes' maps (conformance/conf_xuser.c);
# 2. itapi-perf end to end, a root server with the user's client and the
#    other way round, both modes, the latency tests' data verified, each
#    test and size for 0.25 s (a connection of its own, which lives long
#    enough to be seen), while this script reads both processes'
#    /proc/PID/maps every 20 ms.
#
# The rule, in both: neither process maps a memfd that the other's user
# made (the owner of the memfd's inode, through /proc/PID/map_files), the
# rings' own (/memfd:itapi-emul-conn) excepted.  The programs run from a
# copy in a fresh folder under /tmp that the user can reach, whatever the
# modes of the build tree.  Skips (77) when not root, or where no user can
# be made.
# Usage: cross-user.sh BUILD-ROOT SOURCE-ROOT
set -u
build=$1
src=$2
user=${ITAPI_XUSER_NAME:-itapi-xuser}
rings=itapi-emul-conn

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "not root: the test makes the user $user and runs one end of each pair as root"
command -v setpriv >/dev/null 2>&1 || skip "no setpriv (util-linux) to run a program as $user"
if ! id -u "$user" >/dev/null 2>&1; then
  command -v useradd >/dev/null 2>&1 || skip "no user $user and no useradd to make one"
  useradd -r -M -s /usr/sbin/nologin "$user" || skip "useradd -r -M -s /usr/sbin/nologin $user failed"
  echo "made the system user $user"
fi
uid=$(id -u "$user")
gid=$(id -g "$user")

# The children's stderr files ($TMPDIR, conf_child_spawn) are written in
# $tmp/err, by the user or by root; those of failed tests are kept in
# meson-logs.
logs=$build/meson-logs
tmp=$(mktemp -d /tmp/itapi-xuser.XXXXXX) || exit 1
keep_err() {
  [ -n "$(ls "$tmp/err")" ] && mv "$tmp/err" "$logs/emul-cross-user-err"
  rm -rf "$tmp"
}
trap keep_err EXIT
rm -rf "$logs/emul-cross-user-err"
chmod 755 "$tmp"
mkdir -p "$tmp/conformance" "$tmp/tools/perf" "$tmp/err" "$logs"
chmod 1777 "$tmp/err"
export TMPDIR="$tmp/err"
# The programs find the library at $ORIGIN/.. (conformance) and
# $ORIGIN/../.. (tools/perf), as in the build tree.
cp -L "$build/libitapi.so.0" "$tmp/" || exit 1
for f in "$build"/conformance/conf-*; do
  [ -f "$f" ] && [ -x "$f" ] && cp "$f" "$tmp/conformance/"
done
cp "$build/tools/perf/itapi-perf" "$tmp/tools/perf/" || exit 1
perf=$tmp/tools/perf/itapi-perf
if ! setpriv --reuid="$uid" --regid="$gid" --clear-groups "$tmp/conformance/conf-xproc" -l >/dev/null; then
  echo "FAIL: $user cannot run $tmp/conformance/conf-xproc"
  exit 1
fi

failed=0
t0=$(date +%s)

# ---- 1. the conformance area ----
# Each run's whole report stays in meson-logs; here, what broke the rule
# (each kind of mapping once, with how many tests failed on it first) and
# any test that failed for another reason.
for side in CHILD PARENT; do
  for cma in default 0; do
    # Two of the four (each direction once, each mode once: some 2 minutes
    # each on a loaded 2-core machine) unless ITAPI_XUSER_ALL=1.
    case "${ITAPI_XUSER_ALL:-0}:$side:$cma" in
      0:CHILD:0 | 0:PARENT:default) continue ;;
    esac
    what="xproc, ITAPI_CONF_${side}_USER=$user, ITAPI_EMUL_CMA=$cma"
    log=$logs/emul-cross-user-$(echo "$side" | tr '[:upper:]' '[:lower:]')-cma-$cma.txt
    devs=""
    [ "$cma" = 0 ] && devs="--deviations $src/conformance/deviations/emul-bounce.txt"
    start=$(date +%s)
    # shellcheck disable=SC2086 # $devs: no option or one
    (
      export "ITAPI_CONF_${side}_USER=$user"
      [ "$cma" = 0 ] && export ITAPI_EMUL_CMA=0
      exec "$build/tools/certify/itapi-certify" --provider emul --device emul0 --level itapi \
        --filter /conformance/xproc/ --tests-dir "$tmp/conformance" $devs
    ) >"$log" 2>&1
    rc=$?
    summary="$(tail -n 1 "$log") ($(($(date +%s) - start)) s; $log)"
    if [ $rc -eq 0 ]; then
      echo "PASS: $what: $summary"
      continue
    fi
    failed=$((failed + 1))
    echo "FAIL: $what: $summary"
    grep -oE '(the unprivileged|this root) process [0-9]+ \(uid [0-9]+\) maps a memfd of uid [0-9]+: [^;]*' \
      "$log" | sed -E 's/ process [0-9]+ / process /; s/: [0-9a-f]+-[0-9a-f]+ /: /; s/ [0-9a-f]+:[0-9a-f]+ [0-9]+ / /' |
      sort | uniq -c | sed 's/^ */  tests: /'
    grep '^FAIL ' "$log" | grep -v 'across users' | cut -c 1-400 | sed 's/^/  other: /'
  done
done

# ---- 2. itapi-perf, server and client of different users ----

# The memfd mappings of process $1 that break the rule: $2 is "user" (it
# may map no memfd another uid made) or "root" (no memfd the user made).
offences() {
  me=0
  [ "$2" = user ] && me=$uid
  grep ' /memfd:' "/proc/$1/maps" 2>/dev/null | grep -v " /memfd:$rings" |
    while read -r range rest; do
      owner=$(stat -L -c %u "/proc/$1/map_files/$range" 2>/dev/null) || continue
      if [ "$2" = user ]; then
        [ "$owner" = "$uid" ] && continue
      else
        [ "$owner" != "$uid" ] && continue
      fi
      # shellcheck disable=SC2086 # one space between the columns
      echo "the $2 process (pid $1, uid $me) maps a memfd of uid $owner:" $range $rest
    done
}

# Run "$@" as $1 (root or user), with ITAPI_EMUL_CMA=$2 unless "default",
# in the background; its output in $3.
start_as() {
  who=$1 cma=$2 out=$3
  shift 3
  (
    [ "$cma" = default ] || export ITAPI_EMUL_CMA="$cma"
    if [ "$who" = user ]; then
      exec setpriv --reuid="$uid" --regid="$gid" --clear-groups "$@"
    fi
    exec "$@"
  ) >"$out" 2>&1 &
}

port=$((29000 + $$ % 900))
for server in root user; do
  client=user
  [ "$server" = user ] && client=root
  for cma in default 0; do
    port=$((port + 1))
    what="itapi-perf, server $server, client $client, ITAPI_EMUL_CMA=$cma"
    : >"$tmp/offences"
    start_as "$server" "$cma" "$tmp/server.out" "$perf" -s -i emul0 -p "$port"
    spid=$!
    for _ in $(seq 100); do
      grep -q 'listening on port' "$tmp/server.out" && break
      sleep 0.05
    done
    start_as "$client" "$cma" "$tmp/client.out" "$perf" -c 127.0.0.1 -i emul0 -p "$port" \
      -t send_lat,write_lat,read_lat,send_bw,write_bw,read_bw -S 8,64K -D 0.25
    cpid=$!
    while kill -0 "$cpid" 2>/dev/null; do
      offences "$spid" "$server" >>"$tmp/offences"
      offences "$cpid" "$client" >>"$tmp/offences"
      sleep 0.02
    done
    wait "$cpid"
    crc=$?
    for _ in $(seq 200); do
      kill -0 "$spid" 2>/dev/null || break
      sleep 0.05
    done
    kill -9 "$spid" 2>/dev/null && echo "the server (pid $spid) did not end within 10 s of its client: killed"
    wait "$spid"
    srv_rc=$?
    # One line per memfd and process, whatever its address.
    bad=$(sed -E 's/[0-9a-f]+-[0-9a-f]+ //' "$tmp/offences" | sort -u)
    if [ $crc -ne 0 ] || [ $srv_rc -ne 0 ]; then
      echo "FAIL: $what: the client exited $crc, the server $srv_rc"
      tail -n 5 "$tmp/client.out" "$tmp/server.out"
      failed=$((failed + 1))
    elif [ -n "$bad" ]; then
      echo "FAIL: $what: the data verified, but $(echo "$bad" | wc -l) mappings break the rule:"
      echo "$bad" | sed 's/^/  /'
      failed=$((failed + 1))
    else
      grep -q 'latency data verified' "$tmp/client.out" ||
        { echo "FAIL: $what: the client did not verify the data"; failed=$((failed + 1)); continue; }
      echo "PASS: $what: data verified, nothing mapped but the rings"
    fi
  done
done

echo "$failed failed ($(($(date +%s) - t0)) s)"
[ $failed -eq 0 ]
