#!/usr/bin/env bash
# The Debian package, end to end on this machine: builds it (packaging/deb/build_deb.sh), runs
# lintian (no error or warning), installs it (dpkg -i), checks the system user and the conffiles,
# runs `systemd-analyze verify` on the installed unit, starts sedna-lc as the unit would (its
# User/Group, WorkingDirectory, EnvironmentFile and ExecStart read from the installed unit, plus
# free ports) with a small manifest in /etc/sedna-lc/manifests/, checks it runs the job as that
# user with its state in /var/lib/sedna-lc, stops it, and purges the package: no file, directory,
# user or group left.
#
# Usage: deb_test.sh <sedna-lc binary> <source dir>
# Needs root and no sedna-lc package installed already; exits 77 (CTest: skipped) otherwise.
# The systemd hardening options are checked by systemd-analyze only: there is no running systemd
# here to apply them.
set -uo pipefail
binary="$(realpath "$1")" src="$(realpath "$2")"
if [ "$(id -u)" -ne 0 ] || ! command -v dpkg-deb >/dev/null || ! command -v setpriv >/dev/null; then
  echo "skipped: needs root, dpkg-deb and setpriv"; exit 77
fi
if dpkg-query -W -f='${Status}' sedna-lc 2>/dev/null | grep -q "ok installed"; then
  echo "skipped: a sedna-lc package is installed on this machine; not touching it"; exit 77
fi
t0=$(date +%s.%N)
failures=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
expect() { local what="$1"; shift; if "$@"; then ok "$what"; else fail "$what"; fi; }

work="$(mktemp -d /tmp/sedna-deb-test-XXXXXX)"
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  rm -f /etc/sedna-lc/manifests/deb-test.yaml
  if dpkg-query -W -f='${Status}' sedna-lc 2>/dev/null | grep -q "installed"; then
    dpkg --purge sedna-lc >/dev/null 2>&1
  fi
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
http_get() {  # port path -> "status body", waiting up to 10 s for the port
  /usr/bin/python3 - "$1" "$2" <<'EOF'
import sys, time, urllib.request
end = time.monotonic() + 10
while True:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}{sys.argv[2]}", timeout=2) as r:
            print(r.status, r.read().decode().replace("\n", " ")); break
    except OSError:
        if time.monotonic() > end: print("none"); break
        time.sleep(0.05)  # a port not listening yet: no event to await across processes
EOF
}
listen_addrs() {  # port -> the IPv4 addresses listening on it (/proc/net/tcp, state 0A)
  /usr/bin/python3 - "$1" <<'EOF'
import socket, struct, sys
out = set()
for line in open("/proc/net/tcp").readlines()[1:]:
    f = line.split()
    addr, port = f[1].split(":")
    if f[3] == "0A" and int(port, 16) == int(sys.argv[1]):
        out.add(socket.inet_ntoa(struct.pack("<I", int(addr, 16))))
print(",".join(sorted(out)))
EOF
}
unit_key() { sed -n "s/^$1=//p" /lib/systemd/system/sedna-lc.service | tail -n1; }

# 1. Build, lintian.
deb="$("$src/packaging/deb/build_deb.sh" "$binary" "$work/out")" || { fail "build_deb.sh"; exit 1; }
version="$("$src/packaging/version.sh")"
arch="$(dpkg --print-architecture)"
expect "package named sedna-lc_${version}_${arch}.deb" test "$(basename "$deb")" = "sedna-lc_${version}_${arch}.deb"
if command -v lintian >/dev/null; then
  lint="$(lintian "$deb" 2>&1 | grep -v '^running with root privileges')"
  expect "lintian: no error or warning ${lint:+($lint)}" test -z "$(grep -E '^[EW]:' <<<"$lint")"
else
  echo "note: lintian not installed; not run"
fi

# 2. Install.
files_before="$work/files"
if ! dpkg -i "$deb" >"$work/dpkg-i.log" 2>&1; then
  fail "dpkg -i: $(tail -5 "$work/dpkg-i.log")"; exit 1
fi
ok "dpkg -i"
dpkg -L sedna-lc > "$files_before"
uid="$(id -u sedna-lc 2>/dev/null)"
expect "system user sedna-lc (uid $uid < 1000)" test -n "$uid" -a "${uid:-1000}" -lt 1000
expect "group sedna-lc" bash -c "getent group sedna-lc >/dev/null"
expect "sedna-lc has no login shell" test "$(getent passwd sedna-lc | cut -d: -f7)" = /usr/sbin/nologin
conffiles="$(dpkg-query -W -f='${Conffiles}' sedna-lc)"
expect "conffiles /etc/sedna-lc/sedna-lc.conf and manifests/README" \
  grep -q "/etc/sedna-lc/manifests/README" <<<"$conffiles"
expect "sedna-lc(1) installed" test -s /usr/share/man/man1/sedna-lc.1.gz

# 3. The unit, as systemd reads it.
verify="$(systemd-analyze verify /lib/systemd/system/sedna-lc.service 2>&1)"
expect "systemd-analyze verify: clean ${verify:+($verify)}" test -z "$verify"
if systemd-analyze security --help 2>/dev/null | grep -q -- --offline; then
  systemd-analyze security --offline=yes /lib/systemd/system/sedna-lc.service 2>/dev/null |
    tail -n1 | sed 's/^/     /'
fi

# 4. Start it as the unit would.
user="$(unit_key User)" group="$(unit_key Group)" wd="$(unit_key WorkingDirectory)"
state="$(unit_key StateDirectory)" envfile="$(unit_key EnvironmentFile)" exec_start="$(unit_key ExecStart)"
expect "unit runs as sedna-lc:sedna-lc in /var/lib/sedna-lc" \
  test "$user:$group:$wd:$state" = "sedna-lc:sedna-lc:/var/lib/sedna-lc:sedna-lc"
install -d -o "$user" -g "$group" -m "$(unit_key StateDirectoryMode)" "/var/lib/$state"  # StateDirectory=
env_args=(PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8)
declare -A unit_env=()
while IFS= read -r line; do  # systemd EnvironmentFile: KEY=VALUE, the rest of the line, # comments
  [[ "$line" =~ ^[[:space:]]*([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || continue
  unit_env[${BASH_REMATCH[1]}]="${BASH_REMATCH[2]}"
  env_args+=("${BASH_REMATCH[1]}=${BASH_REMATCH[2]}")
done < "${envfile#-}"
expanded="$exec_start"  # $VAR in ExecStart: split on whitespace, as systemd does
for k in "${!unit_env[@]}"; do expanded="${expanded//\$$k/${unit_env[$k]}}"; done
read -r -a cmd <<<"$expanded"
expect "ExecStart runs sedna-lc standalone -f /etc/sedna-lc/manifests/" \
  test "${cmd[0]} ${cmd[1]} ${cmd[2]} ${cmd[3]}" = "/usr/bin/sedna-lc standalone -f /etc/sedna-lc/manifests/"
mkdir -p "/var/lib/sedna-lc/deb-test"
: > /var/lib/sedna-lc/deb-test/index.txt
chown -R sedna-lc:sedna-lc /var/lib/sedna-lc/deb-test
cat > /etc/sedna-lc/manifests/deb-test.yaml <<'EOF'
apiVersion: sedna.io/v1alpha1
kind: Dataset
metadata: {name: deb-test-data}
spec: {url: /var/lib/sedna-lc/deb-test/index.txt, format: txt, nodeName: edge}
---
apiVersion: sedna.io/v1alpha1
kind: Model
metadata: {name: deb-test-model}
spec: {url: /var/lib/sedna-lc/deb-test/model.pkl, format: pkl}
---
apiVersion: sedna.io/v1alpha1
kind: IncrementalLearningJob
metadata: {name: deb-test-job}
spec:
  initialModel: {name: deb-test-model}
  dataset: {name: deb-test-data, trainProb: 0.8}
  outputDir: /var/lib/sedna-lc/deb-test/output
  trainSpec:
    template: {spec: {containers: [{name: train, image: none, args: ["train.py"]}]}}
    trigger:
      checkPeriodSeconds: 60
      condition: {operator: ">", threshold: 1000000, metric: num_of_samples}
  evalSpec:
    template: {spec: {containers: [{name: eval, image: none, args: ["eval.py"]}]}}
  deploySpec:
    model: {name: deb-test-model}
    trigger:
      condition: {operator: ">", threshold: 0.01, metric: precision_delta}
EOF
sport="$(free_port)" wport="$(free_port)"
(cd "$wd" && exec setpriv --reuid="$user" --regid="$group" --init-groups --no-new-privs \
   --inh-caps=-all --bounding-set=-all env -i "${env_args[@]}" \
   "${cmd[@]}" --bind-port "$wport" --status-port "$sport") > "$work/lc.log" 2>&1 &
pid=$!
read -r st body <<<"$(http_get "$sport" /healthz)"
expect "running as the unit: /healthz $st" test "$st" = 200
expect "process runs as $user" test "$(ps -o user= -p "$pid" 2>/dev/null | tr -d ' ')" = "$user"
read -r st body <<<"$(http_get "$sport" /status)"
expect "the job from /etc/sedna-lc/manifests/ is loaded (/status: ${body:0:200})" \
  grep -q "deb-test-job" <<<"$body"
listen="$(listen_addrs "$wport")"
expect "worker API listens on 127.0.0.1 only (sedna-lc.conf; listening: $listen)" test "$listen" = 127.0.0.1
expect "database in /var/lib/sedna-lc owned by $user" \
  test "$(stat -c %U /var/lib/sedna-lc/database.db 2>/dev/null)" = "$user"
status_out="$(setpriv --reuid="$user" --regid="$group" --init-groups /usr/bin/sedna-lc status \
  --db /var/lib/sedna-lc/database.db --status-port "$sport" 2>&1)"
expect "sedna-lc status as $user lists the job" grep -q "deb-test-job" <<<"$status_out"
kill -TERM "$pid"
wait "$pid"; rc=$?; pid=""
expect "SIGTERM: exit 0 ($rc; log: $(tail -2 "$work/lc.log" | tr '\n' ' '))" test "$rc" = 0

# 5. Purge: nothing left.
rm -f /etc/sedna-lc/manifests/deb-test.yaml
if dpkg --purge sedna-lc > "$work/purge.log" 2>&1; then ok "dpkg --purge"; else fail "dpkg --purge: $(cat "$work/purge.log")"; fi
expect "dpkg --purge printed no warning ($(tr '\n' ' ' < "$work/purge.log"))" \
  bash -c "! grep -qi warning '$work/purge.log'"
left=()
while IFS= read -r f; do
  case "$f" in /etc/sedna-lc*|/usr/share/doc/sedna-lc*|*/sedna-lc|*/sedna-lc.*|*/sedna-lc.service) ;;
    *) continue ;; esac  # shared directories (/usr/bin, /lib/systemd/system, ...) stay
  [ -e "$f" ] && left+=("$f")
done < "$files_before"
expect "no package file or directory left (${left[*]:-})" test ${#left[@]} -eq 0
expect "/var/lib/sedna-lc removed" test ! -e /var/lib/sedna-lc
expect "user sedna-lc removed" bash -c '! getent passwd sedna-lc >/dev/null'
expect "group sedna-lc removed" bash -c '! getent group sedna-lc >/dev/null'
expect "dpkg no longer knows sedna-lc" bash -c '! dpkg-query -W sedna-lc >/dev/null 2>&1'

echo "deb_test: $(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo '?') s, $failures failure(s)"
[ "$failures" -eq 0 ]
