# Shell functions the dtest-family pair scripts share (sourced, not run):
# one of Debian's DAT test tools as a server and a client in two processes
# on one IT-API interface, each side held to the line the tool prints
# when it passed.
#
# The sourcing script sets ia (the interface) and dir (a scratch
# directory), and may set client_args (arguments for the client alone);
# pair_run sets fail=1 when a side failed.
#
# SPDX-License-Identifier: MIT

fail=0
client_args=${client_args:-}

# pair_run TOOL NAME PASS READY RETRY [ARG...]
#   Run TOOL -s (the server) and then TOOL -h ADDR $client_args (the
#   client; ADDR is $DAT_PAIR_ADDR, default 127.0.0.1: the lab gives a
#   device's), both with -P itapi-$ia and ARGs, each for at most 120 s.
#   The client starts
#   once the server printed a line matching READY (an extended regular
#   expression; empty: at once), and starts again while what it printed
#   matches RETRY (the server not listening yet; empty: never), up to 100
#   times.  Each side passes when it exits 0 and prints a line matching
#   PASS; NAME names the run in what is printed.
pair_run() {
  tool=$1 name=$2 pass=$3 ready=$4 retry=$5
  # Line-buffered where stdbuf is there (the lab VM has none): the READY
  # line shows when printed, not at the server's exit.
  lb=
  command -v stdbuf >/dev/null && lb="stdbuf -oL"
  shift 5
  : > "$dir/server"
  timeout 120 $lb "$tool" -s -P "itapi-$ia" "$@" > "$dir/server" 2>&1 &
  spid=$!
  if [ -n "$ready" ]; then
    tries=0
    while ! grep -Eq "$ready" "$dir/server" && kill -0 $spid 2>/dev/null; do
      tries=$((tries + 1))
      [ $tries -lt 300 ] || break
      sleep 0.1
    done
  fi
  tries=0
  while :; do
    # shellcheck disable=SC2086 # client_args: words
    timeout 120 $lb "$tool" -h "${DAT_PAIR_ADDR:-127.0.0.1}" $client_args -P "itapi-$ia" "$@" > "$dir/client" 2>&1
    crc=$?
    [ -n "$retry" ] && grep -Eq "$retry" "$dir/client" || break
    tries=$((tries + 1))
    [ $tries -lt 100 ] || break
    sleep 0.1
  done
  wait $spid
  src=$?
  for side in server client; do
    rc=$src; [ $side = client ] && rc=$crc
    if [ $rc -ne 0 ] || ! grep -Eq "$pass" "$dir/$side"; then
      echo "${tool##*/} $name over $ia: the $side exited with $rc without its pass line:"
      sed 's/^/  | /' "$dir/$side"
      fail=1
    else
      echo "${tool##*/} $name over $ia, $side: $(grep -Eh "$pass" "$dir/$side" | sed 's/^[0-9]*: //; s/^ *//')"
    fi
  done
}
