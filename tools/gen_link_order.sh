#!/usr/bin/env bash
# Regenerates tools/link-order/sedna-lc.txt: the functions sedna-lc runs, in the order it first runs
# them, for ld.lld --symbol-ordering-file (CMakeLists.txt, SEDNA_LEAN_BINARY). Code pages are
# mapped in 64 KiB fault-around blocks, so packing start-up and round code together keeps the
# rest of the binary off the resident set (docs/benchmarks.md, "Idle RSS and link order").
#
# Each workload runs the release sedna-lc under valgrind's callgrind, dumping every DUMP_BB basic
# blocks, so the dumps of one process are in time order; workloads come in this order:
#   1. rss_bench's idle scenarios: start-up, the GM handshake, the status server's endpoints,
#      idle; 100 Datasets + IL jobs; the GM unreachable (the link's doctor, reconnects: what an
#      edge node runs while its GM is down), in that order, so an idle LC's code stays together
#   2. il_demo, 2 rounds: the cluster round trip (GM frames, worker POSTs, eval, deploy)
#   3. the standalone demo, 2 rounds: manifests, the local GM, worker processes (under valgrind,
#      whose 3.19 lacks pidfd_open, their exits are watched through SIGCHLD)
# A stale list is harmless: functions it does not name are linked after the ones it does.
#
# usage: tools/gen_link_order.sh        (needs valgrind; builds build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "gen_link_order: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
DUMP_BB=${DUMP_BB:-2000000}
out=tools/link-order/sedna-lc.txt
work=$(mktemp -d /tmp/sedna-link-order.XXXXXX)
trap 'rm -rf "$work"' EXIT

cmake --preset release >/dev/null
cmake --build build/release --target sedna-lc il_demo rss_bench
lc=$(realpath build/release/sedna-lc)

# The drivers start <work>/<step>/sedna-lc in place of sedna-lc. They give sedna-lc an
# environment of their own, so each step has its own wrapper rather than a variable.
wrapper() {
  mkdir -p "$work/$1"
  printf '#!/bin/sh\nexec valgrind -q --tool=callgrind --demangle=no --compress-strings=no %s %s "%s" "$@"\n' \
    "--compress-pos=no --dump-instr=no --dump-line=no --dump-every-bb=$DUMP_BB" \
    "--callgrind-out-file=$work/$1.%p.cg" "$lc" >"$work/$1/sedna-lc"
  chmod +x "$work/$1/sedna-lc"
}
wrapper 1
wrapper 2
wrapper 3

echo "gen_link_order: 1/3 rss_bench idle-0, idle-100, GM unreachable (under callgrind, ~1 min)"
build/release/bench/rss_bench --sizes= --idle-seconds=1 --settle-seconds=3 \
  --lc="$work/1/sedna-lc" >"$work/rss.log" 2>&1 || { cat "$work/rss.log"; exit 1; }
echo "gen_link_order: 2/3 il_demo, 2 rounds"
build/release/tests/integration/il_demo "$work/2/sedna-lc" examples/incremental_learning/digits 2 \
  >"$work/il_demo.log" 2>&1 || { tail -30 "$work/il_demo.log"; exit 1; }
echo "gen_link_order: 3/3 standalone demo, 2 rounds"
/usr/bin/python3 examples/incremental_learning/digits/demo.py "$work/3/sedna-lc" --rounds 2 \
  >"$work/demo.log" 2>&1 || { tail -30 "$work/demo.log"; exit 1; }

mkdir -p "$(dirname "$out")"
python3 - "$work" "$out" <<'EOF'
import glob, os, re, sys
work, out = sys.argv[1], sys.argv[2]
# <step>.<pid>.cg.<n> are the periodic dumps, <step>.<pid>.cg the last one at exit.
def key(path):
    m = re.match(r'(\d+)\.(\d+)\.cg(?:\.(\d+))?$', os.path.basename(path))
    step, pid, n = int(m[1]), int(m[2]), int(m[3]) if m[3] else 1 << 30
    first = min(os.path.getmtime(p) for p in glob.glob(f'{work}/{step}.{pid}.cg*'))
    return (step, first, pid, n)
files = sorted((p for p in glob.glob(f'{work}/*.cg*')
                if re.match(r'\d+\.\d+\.cg(\.\d+)?$', os.path.basename(p))), key=key)
lc = os.path.realpath('build/release/sedna-lc')
names, seen = [], set()
for path in files:
    obj = cobj = None  # the object of the current fn=, of the next cfn= (cob=, else obj)
    for line in open(path, errors='replace'):
        if line.startswith('ob='):
            obj = line[3:].strip()
        elif line.startswith('cob='):
            cobj = line[4:].strip()
        elif line.startswith(('fn=', 'cfn=')):
            callee = line.startswith('cfn=')
            where = (cobj or obj) if callee else obj
            cobj = None
            if where != lc:
                continue
            n = re.sub(r'^\(\d+\)\s*', '', line.split('=', 1)[1].strip()).split("'")[0]
            if n and not n.startswith('0x') and n not in seen:
                seen.add(n)
                names.append(n)
with open(out, 'w') as f:
    f.write('\n'.join(names) + '\n')
print(f'gen_link_order: {len(names)} functions from {len(files)} dumps -> {out}')
EOF
cmake --preset release >/dev/null  # picks up the list if it is new
cmake --build build/release --target sedna-lc
