#!/usr/bin/env python3
"""Writes sedna-lc(1): fixed sections about the commands, files and environment, and an OPTIONS
section generated from `sedna-lc --help` (CLI11's "  --flag TYPE   text" lines), so the flags
listed are the binary's.

Usage: make_manpage.py --help-binary SEDNA_LC --version V --date YYYY-MM-DD > sedna-lc.1
"""
import argparse
import re
import subprocess
import sys


def esc(s):
    """roff-escapes text: backslashes, and '-' as a minus sign; a leading . or ' is protected."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + s if s[:1] in (".", "'") else s


def options(help_text):
    out = []
    for line in help_text.splitlines():
        m = re.match(r"^\s{2}(-\S+(?:,\s?-\S+)*)(?:\s(\S+))?\s{2,}(.*)$", line)
        if m:
            flags, arg, text = m.group(1), m.group(2), m.group(3)
            names = ", ".join("\\fB" + esc(f.strip()) + "\\fR" for f in flags.split(","))
            out.append((names + (" \\fI" + esc(arg) + "\\fR" if arg else ""), text))
    return out


MAN = r""".TH SEDNA\-LC 1 "{date}" "sedna\-lc {version}" "User Commands"
.SH NAME
sedna\-lc \- Local Controller for KubeEdge Sedna incremental and lifelong learning jobs
.SH SYNOPSIS
.B sedna\-lc
.RI [ options ]
.br
.B sedna\-lc standalone
.B \-f
.I manifests
.RB [ \-\-worker\-timeout
.IR seconds ]
.RI [ options ]
.br
.B sedna\-lc status
.RI [ options ]
.br
.B sedna\-lc rollback\-model
.I model\-path
.RB [ \-\-version
.IR n ]
.RI [ options ]
.SH DESCRIPTION
.B sedna\-lc
runs on an edge node. It watches each job's dataset index grow, fires the job's training trigger,
writes each round's train and eval sample files, has the train and eval workers run, and deploys
a new model only when it beats the deployed one.
.PP
Without a command it runs in cluster mode: it connects to Sedna's Global Manager at
.B GM_ADDRESS
and serves the workers' API on
.BR BIND_PORT .
.PP
.B standalone
runs the jobs of the Sedna YAML manifests in
.I manifests
(a file or a directory of *.yaml files, watched for changes) on this machine, with no Kubernetes
and no Global Manager: sedna\-lc keeps the job conditions itself and starts the workers of the
pod templates as local processes.
.PP
.B status
prints one line per job, from the running daemon's status server or read\-only from its database.
.B rollback\-model
lists the earlier models kept beside a deployed model, or restores one.
.SH OPTIONS
{options}
.SH ENVIRONMENT
.TP
.B GM_ADDRESS
the Global Manager's websocket host:port (cluster mode).
.TP
.B NODENAME
this node's name, sent to the Global Manager (default: HOSTNAME, else the host name).
.TP
.B BIND_PORT
the worker API port (default 9100).
.TP
.B ROOTFS_MOUNT_DIR
where the host's / is mounted (default /rootfs; standalone mode: empty, host paths are used as
they are).
.TP
.B SEDNA_DB_PATH
the SQLite database (cluster mode: default <rootfs>/var/lib/sedna/sedna\-lc/database.db when the
rootfs exists, else /var/lib/sedna/database.db; standalone mode: ./.sedna\-lc/database.db).
.TP
.B SEDNA_GM_PROTOCOL
auto (default), g1 or g2: how the incremental-learning deploy decision follows the Global
Manager's generation (\-\-gm\-protocol).
.TP
.B TZ
the time zone of the trigger windows.
.SH FILES
.TP
.I /etc/sedna\-lc/manifests/
the manifests the sedna\-lc service runs (sedna\-lc.service, as user sedna\-lc).
.TP
.I /etc/sedna\-lc/sedna\-lc.conf
the service's environment: SEDNA_LC_OPTS (extra flags) and variables such as TZ.
.TP
.I /var/lib/sedna\-lc/
the service's state: database.db, the sample spool, workers/<job>/<worker>.log.
.SH EXIT STATUS
0 after a clean shutdown (SIGTERM or SIGINT); 2 when the configuration is rejected or start\-up
fails, with a message naming the variable, flag or file.
.SH SEE ALSO
.BR systemctl (1),
.BR systemd.exec (5)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--help-binary", required=True, help="a sedna-lc runnable here")
    ap.add_argument("--version", required=True)
    ap.add_argument("--date", required=True)
    a = ap.parse_args()
    r = subprocess.run([a.help_binary, "--help"], capture_output=True, text=True)
    opts = options(r.stdout + r.stderr)
    if len(opts) < 5:
        sys.exit(f"make_manpage: `{a.help_binary} --help` lists {len(opts)} options; expected the "
                 "flag table")
    body = "\n".join(f".TP\n{names}\n{esc(text)}" for names, text in opts)
    sys.stdout.write(MAN.format(date=a.date, version=esc(a.version), options=body))


if __name__ == "__main__":
    main()
