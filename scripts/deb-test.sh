#!/usr/bin/env bash
# The Debian packages (debian/): build them from a copy of the source tree
# with dpkg-buildpackage, check them with lintian, install them on this
# machine, run itapi-info, the ping-pong, a certification row, a program
# compiled against libitapi-dev and libdat2 opening every IA of itapi-dat
# (and Debian's dtest over one, when dapl2-utils is installed) from the
# installed files only, and purge them; /etc/dat.conf (libdapl2's) must
# be the same throughout.
#
#   scripts/deb-test.sh [SRCDIR]
#
# Exit 77 (skipped) without root (dpkg -i), without dpkg-buildpackage or
# debhelper, or when a package of this name is installed already: this
# test never replaces what the machine's owner installed.
set -uo pipefail
src=$(cd "${1:-$(dirname "$0")/..}" && pwd)
pkgs=(libitapi0 libitapi-dev itapi-tools itapi-provider-ib itapi-dat)

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "not root: installing the packages needs dpkg -i"
command -v dpkg-buildpackage >/dev/null || skip "no dpkg-buildpackage (apt-get install dpkg-dev)"
command -v dh >/dev/null || skip "no debhelper (apt-get install debhelper)"
for p in "${pkgs[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    skip "$p is installed already; this test does not replace it"
  fi
done

work=$(mktemp -d /tmp/itapi-deb.XXXXXX)
installed=0
cleanup() {
  if [ "$installed" = 1 ]; then
    dpkg --purge "${pkgs[@]}" >"$work/purge.log" 2>&1 || { echo "FAIL: dpkg --purge"; cat "$work/purge.log"; }
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The tracked and untracked (not ignored) files, as a release would have.
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
tree="$work/itapi-$version"
mkdir -p "$tree"
(cd "$src" && git ls-files -z --cached --others --exclude-standard 2>/dev/null |
   xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
   tar --null -T - -cf -) | tar -xf - -C "$tree" || fail "copying the source tree from $src"
[ -f "$tree/debian/control" ] || fail "no debian/control in the copy of $src (is it a git tree?)"

echo "# dpkg-buildpackage -us -uc -b in $tree"
start=$(date +%s)
# Niced: the other suites run beside it and some of them time a peer.
if ! (cd "$tree" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
        nice -n 10 dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1); then
  tail -60 "$work/build.log"
  fail "dpkg-buildpackage failed (the whole log: rerun scripts/deb-test.sh by hand)"
fi
echo "# built in $(( $(date +%s) - start )) s"
changes=$(ls "$work"/itapi_*.changes)
debs=()
for p in "${pkgs[@]}"; do
  d=$(ls "$work/${p}_${version}_"*.deb 2>/dev/null) || fail "no $p package was built"
  debs+=("$d")
  echo "# $(basename "$d"): $(dpkg-deb -c "$d" | grep -vc '/$') files"
done

if command -v lintian >/dev/null; then
  if ! lintian --fail-on error,warning "$changes" >"$work/lintian.log" 2>&1; then
    cat "$work/lintian.log"
    fail "lintian found errors or warnings in the packages"
  fi
  echo "# lintian: no error, no warning"
else
  echo "# lintian not installed: not run (apt-get install lintian)"
fi

# libdapl2's registry file, which itapi-dat must leave alone (Debian
# Policy 10.7.3: no maintainer script alters a conffile).
datconf_sum() { if [ -e /etc/dat.conf ]; then sha256sum </etc/dat.conf; else echo absent; fi; }
datconf_before=$(datconf_sum)

dpkg -i "${debs[@]}" >"$work/install.log" 2>&1 || { cat "$work/install.log"; installed=1; fail "dpkg -i"; }
installed=1
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

# Only what the packages installed: no build tree, no provider path.
run() { env -u LD_LIBRARY_PATH -u ITAPI_PROVIDER_PATH -u ITAPI_PROVIDER -u ITAPI_CONF \
          -C / "$@"; }
lib=$(run ldd /usr/bin/itapi-info | awk '/libitapi\.so/ { print $3 }')
# (/lib is /usr/lib on a merged-/usr system)
[ -n "$lib" ] && [ "$(readlink -f "$lib")" = "$(readlink -f "/usr/lib/$multiarch/libitapi.so.0")" ] ||
  fail "/usr/bin/itapi-info loads libitapi from '$lib', not /usr/lib/$multiarch"
info=$(run /usr/bin/itapi-info 2>&1) || { echo "$info"; fail "itapi-info exited $?"; }
for want in "emul0:" "iwarp0:" "(/usr/lib/$multiarch/itapi/providers/libitapi-ib.so)"; do
  grep -qF "$want" <<<"$info" || { echo "$info"; fail "itapi-info does not show '$want'"; }
done
echo "# itapi-info: emul0, iwarp0 and the installed vp/ib module"

for ia in emul0 iwarp0; do
  out=$(run /usr/bin/itapi-pingpong -i "$ia" -n 200 -s 4096 2>&1) ||
    { echo "$out"; fail "itapi-pingpong -i $ia"; }
  grep -q "^all data verified" <<<"$out" || { echo "$out"; fail "itapi-pingpong -i $ia verified nothing"; }
  echo "# itapi-pingpong -i $ia: $(grep '^all data verified' <<<"$out")"
done

# A certification row from the installed test programs and rules, with
# the tree the packages were built in still there: the report names no
# file of that tree (rules, deviation files), and the digest it gives each
# test program is that of the installed one.
out=$(run /usr/bin/itapi-certify -p emul --filter /conformance/ia/ --filter /rnicpi/device/ --timeout 60 -q \
        --json "$work/certify.json" 2>&1) ||
  { echo "$out"; fail "itapi-certify -p emul --filter /conformance/ia/ --filter /rnicpi/device/ from the installed files"; }
grep -q "passed" <<<"$out" || { echo "$out"; fail "itapi-certify printed no summary"; }
if grep -F "$tree/" "$work/certify.json"; then
  fail "the installed itapi-certify used the build tree $tree"
fi
programs=$(grep -o '"catalog programs": "[^"]*"' "$work/certify.json" | cut -d'"' -f4 | tr ',' '\n')
[ -n "$programs" ] || fail "the itapi-certify report lists no test program"
while read -r name digest; do
  want="sha256:$(sha256sum "/usr/libexec/itapi/cert/$name" | cut -d' ' -f1)"
  [ "$digest" = "$want" ] ||
    fail "itapi-certify ran a $name other than /usr/libexec/itapi/cert/$name ($digest, not $want)"
done <<<"$programs"
echo "# itapi-certify: $(grep -m1 'CERTIFIED' <<<"$out")"

# libitapi-dev: a program built with pkg-config against the installed
# headers and library opens an interface.
cat >"$work/open.c" <<'C'
#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <stdio.h>
int main(void)
{
  it_ia_handle_t ia;
  it_status_t st = it_ia_create("iwarp0", 2, 0, &ia);
  if (st != IT_SUCCESS) {
    fprintf(stderr, "it_ia_create(iwarp0) failed with %d\n", (int) st);
    return 1;
  }
  st = it_ia_free(ia);
  printf("opened and freed iwarp0: %d\n", (int) st);
  return st != IT_SUCCESS;
}
C
cc -o "$work/open" "$work/open.c" $(pkg-config --cflags --libs itapi) ||
  fail "compiling against libitapi-dev (pkg-config itapi)"
run "$work/open" || fail "the program built against libitapi-dev"
echo "# libitapi-dev: a program built with pkg-config opened iwarp0"

# itapi-dat: libdat2 opens each IA of the installed dat.conf fragment by
# its name, dlopening the module by the path the line gives.
[ "$(datconf_sum)" = "$datconf_before" ] || fail "installing itapi-dat changed /etc/dat.conf"
fragment=/usr/share/itapi/dat.conf
module=/usr/lib/$multiarch/itapi/dat/libdaplitapi.so
[ -f "$module" ] || fail "itapi-dat installed no $module"
ias=$(awk '!/^#/ && NF { print $1 }' "$fragment")
[ -n "$ias" ] || fail "$fragment names no IA"
awk -v m="$module" '!/^#/ && NF && $5 != m { bad = 1 } END { exit bad }' "$fragment" ||
  fail "$fragment names a library other than $module"
cat >"$work/dat_open.c" <<'C'
#include <dat2/udat.h>
#include <stdio.h>
int main(int argc, char **argv)
{
  for (int i = 1; i < argc; i++) {
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    DAT_RETURN st = dat_ia_open(argv[i], 8, &async_evd, &ia);
    if (st != DAT_SUCCESS) {
      const char *major = "?", *minor = "?";
      dat_strerror(st, &major, &minor);
      fprintf(stderr, "dat_ia_open(%s) failed: %s %s\n", argv[i], major, minor);
      return 1;
    }
    st = dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG);
    if (st != DAT_SUCCESS) {
      fprintf(stderr, "dat_ia_close(%s) failed: 0x%x\n", argv[i], (unsigned) st);
      return 1;
    }
    printf("opened and closed %s\n", argv[i]);
  }
  return 0;
}
C
cc -o "$work/dat_open" "$work/dat_open.c" -ldat2 || fail "compiling against libdat2 (libdapl-dev)"
# shellcheck disable=SC2086 # one argument per IA name
out=$(run env DAT_OVERRIDE="$fragment" "$work/dat_open" $ias 2>&1) ||
  { echo "$out"; fail "libdat2 did not open every IA of $fragment"; }
echo "# itapi-dat: libdat2 opened ${ias//$'\n'/ } through $fragment"

# Debian's dtest, unchanged, over itapi-emul0: a server and a client in
# a network namespace of their own, where dtest's fixed ports (15828,
# 45248) meet no other run on this host.
if ! command -v dtest >/dev/null; then
  echo "# dtest: not run (apt-get install dapl2-utils)"
elif ! unshare --net ip link set lo up 2>/dev/null; then
  echo "# dtest: not run (no network namespace here: unshare --net, ip link)"
else
  # shellcheck disable=SC2016 # expanded by the inner shell
  out=$(run env DAT_OVERRIDE="$fragment" unshare --net sh -c '
    ip link set lo up || exit 1
    timeout 60 dtest -s -P itapi-emul0 -b 4096 >"$1/dtest-server" 2>&1 &
    server=$!
    # The client tries again until the server listens.
    tries=0
    while :; do
      timeout 60 dtest -h 127.0.0.1 -P itapi-emul0 -b 4096 >"$1/dtest-client" 2>&1
      client=$?
      grep -q "Could not connect to" "$1/dtest-client" && [ $tries -lt 100 ] || break
      tries=$((tries + 1)); sleep 0.1
    done
    [ $client = 0 ] || kill $server 2>/dev/null
    wait $server && [ $client = 0 ]' sh "$work" 2>&1)
  rc=$?
  for side in server client; do
    if [ $rc != 0 ] || ! grep -q "DAPL Test Complete. PASSED" "$work/dtest-$side"; then
      echo "$out"; sed "s/^/  $side | /" "$work/dtest-$side" 2>/dev/null
      fail "dtest over itapi-emul0 from the installed files (exit status $rc)"
    fi
  done
  echo "# itapi-dat: dtest over itapi-emul0, server and client: DAPL Test Complete. PASSED"
fi

# Purged, itapi-dat leaves nothing behind and /etc/dat.conf as it was.
installed=0
dpkg --purge "${pkgs[@]}" >"$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "dpkg --purge"; }
for f in "$module" "$fragment"; do
  [ ! -e "$f" ] || fail "$f is still there after dpkg --purge itapi-dat"
done
[ "$(datconf_sum)" = "$datconf_before" ] || fail "/etc/dat.conf differs after dpkg --purge itapi-dat"
echo "# purged: /etc/dat.conf as before"
echo "PASS: the packages build, install, run and are removed"
