#!/usr/bin/env bash
# End-to-end test of the Debian packages (scripts/build-deb.sh) in
# throw-away roots: overlays of this machine's / (changes go to a tmpfs) in
# new mount and PID namespaces. Nothing is installed, diverted, started or
# left mounted on the machine itself; every process started inside dies
# with the PID namespace. Must run as root. docs/install.md describes it.
#
# Two roots, one after the other (PKGTEST_MODES="sysv systemd"):
#   sysv     chroot, no systemd: rrdscale-switch uses /etc/init.d/rrdcached
#   systemd  systemd 252 as PID 1 of the namespace (also its own cgroup,
#            network and UTS namespaces), the test as its only service:
#            rrdscale-switch uses systemctl, rrdscale.socket/.service run
#
#   bash scripts/package-test.sh              # build-deb.sh, then the test
#   SKIP_BUILD=1 bash scripts/package-test.sh  # test target/debian/*.deb as they are
#
# Inside, with Debian's rrdtool, rrdcached and librrd8 installed (.ci/run):
#  a. Debian's rrdcached started by its init script (journal and base dirs
#     from /etc/default/rrdcached); RRD files created with Debian's rrdtool.
#  b. a client writes one value per file per second through the socket
#     (`rrdtool update --daemon`), recording every acknowledged update.
#  c. dpkg -i of both packages changes nothing in use.
#  d. rrdscale-switch on: our programs, library and daemon; the client's
#     refusals only during the switch.
#  e. rrdscale-switch off: Debian's back, Debian's rrdcached running.
#  f. every acknowledged value is in the files (Debian's rrdtool fetch).
#  h. (sysv) the unit's protocol with a systemd stand-in: LISTEN_FDS socket adopted,
#     READY=1, WATCHDOG=1, STOPPING=1 (RRDSCALE_PKGTEST_NOTIFY=0 skips it).
#  g. switch on again, an upgrade, dpkg --purge: no diversion left, Debian's
#     files intact.
#  i. (sysv) without Debian's packages: on provides the names, off removes them.
set -euo pipefail

# Seconds the client writes in each phase.
PHASE_SECS=${PHASE_SECS:-6}
# Largest number of refused updates the test accepts per switch.
MAX_REFUSED=${MAX_REFUSED:-60}

fail() {
    echo "package-test: FAILED: $*" >&2
    exit 1
}
step() { echo "== package-test: $*"; }

# ---------------------------------------------------------------------------
# Inside the throw-away root (PID 1's child of the new PID namespace).
# ---------------------------------------------------------------------------
inside_root() {
    # sysv: no systemd, the switch uses /etc/init.d/rrdcached.
    # systemd: systemd is PID 1 (we run as its pkgtest.service).
    local mode=$1
    cd /root/pkgtest
    export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C
    unset RRDCACHED_ADDRESS LD_LIBRARY_PATH
    local ma
    ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
    local libdir=/usr/lib/$ma
    local sock=/var/run/rrdcached.sock pidfile=/var/run/rrdcached.pid
    local base=/srv/rrd/db journal=/srv/rrd/journal
    local debs=(/root/pkgtest/rrdscale_*.deb /root/pkgtest/librrd8-rrdscale_*.deb)

    for p in rrdtool rrdcached librrd8; do
        [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] ||
            fail "Debian's $p is not installed (.ci/run installs it)"
    done
    [ -z "$(dpkg-divert --list | grep -i rrdscale || true)" ] || fail "a diversion of rrdscale exists before the test"

    # Facts about whose a program or the daemon is.
    # (Outputs are captured before grep -q reads them: under pipefail, a
    # writer that grep -q leaves early would fail the pipeline.)
    is_ours_v() {
        local v
        v=$("$1" -v 2>/dev/null || true)
        [[ "${v%%$'\n'*}" == *rrdscale* ]]
    }
    status_says() {
        local v
        v=$(rrdscale-switch status)
        grep -q "$1" <<<"$v"
    }
    daemon_pid() {
        local pid
        { read -r pid <"$pidfile"; } 2>/dev/null || return 1
        kill -0 "$pid" 2>/dev/null && echo "$pid"
    }
    # The daemon's pid file appears after the init script returns (the
    # daemon forks first): wait up to 10 s for it.
    daemon_up() {
        local n=0
        until daemon_pid >/dev/null; do
            [ $n -lt 50 ] || return 1
            sleep 0.2
            n=$((n + 1))
        done
    }
    daemon_exe() {
        local pid
        pid=$(daemon_pid) || { echo none; return; }
        readlink "/proc/$pid/exe"
    }
    start_debian() {
        if [ "$mode" = systemd ]; then
            systemctl start rrdcached.service
        else
            /etc/init.d/rrdcached start
        fi
    }
    # unit_is UNIT STATE...: systemctl is-active (or is-enabled with -e)
    unit_is() {
        local what=is-active
        if [ "$1" = -e ]; then what=is-enabled; shift; fi
        local unit=$1 got
        shift
        got=$(systemctl "$what" "$unit" 2>/dev/null || true)
        for want in "$@"; do [ "$got" = "$want" ] && return 0; done
        fail "$unit is $got ($what), not $*"
    }
    # dpkg --verify of Debian's packages: no file of theirs changed (the
    # conffile we edit excepted).
    debian_intact() {
        local v
        v=$(dpkg --verify rrdtool rrdcached librrd8 2>&1 | grep -v ' c /etc/default/rrdcached$' || true)
        [ -z "$v" ] || fail "Debian's files changed ($1): $v"
    }
    debian_state() {
        is_ours_v /usr/bin/rrdtool && fail "$1: /usr/bin/rrdtool -v is rrdscale's"
        [ -L /usr/bin/rrdcached ] && fail "$1: /usr/bin/rrdcached is a link ($(readlink /usr/bin/rrdcached))"
        [ "$(readlink -f "$libdir/librrd.so.8")" = "$libdir/librrd.so.8.2.1" ] ||
            fail "$1: librrd.so.8 is $(readlink -f "$libdir/librrd.so.8")"
        debian_intact "$1"
    }

    # --- a. Debian's rrdcached, files made by Debian's rrdtool ---------------
    step "a. Debian's rrdcached with journal and base dirs; RRD files from Debian's rrdtool"
    # The machine's own settings (it may have changed the file) do not
    # matter: the test's are written whole, Debian's defaults plus a base
    # and a journal directory and short write delays.
    cat >/etc/default/rrdcached <<EOF
DAEMON=/usr/bin/rrdcached
WRITE_TIMEOUT=4
WRITE_JITTER=2
BASE_PATH=$base/
JOURNAL_PATH=$journal/
PIDFILE=$pidfile
SOCKFILE=$sock
BASE_OPTIONS="-B"
EOF
    start_debian
    daemon_up || fail "Debian's rrdcached did not start"
    local debian_enabled=
    if [ "$mode" = systemd ]; then
        unit_is rrdcached.service active
        debian_enabled=$(systemctl is-enabled rrdcached.service 2>/dev/null || true)
        echo "rrdcached.service: active, $debian_enabled"
    fi
    local pid0
    pid0=$(daemon_pid)
    [ "$(daemon_exe)" = /usr/bin/rrdcached ] || fail "the daemon is $(daemon_exe)"
    [ -S "$sock" ] || fail "no socket $sock"
    echo "socket: $(stat -c '%A %U:%G' "$sock")"
    local files=() now
    now=$(date +%s)
    for i in 1 2 3 4 5; do
        rrdtool create "$base/f$i.rrd" --start $((now - 1)) --step 1 DS:v:GAUGE:60:U:U RRA:LAST:0:1:7200
        files+=("$base/f$i.rrd")
    done
    # The daemon's wrapper builds the option list Debian's init script built.
    local debian_args
    debian_args=$(tr '\0' ' ' <"/proc/$pid0/cmdline")
    echo "rrdcached runs: $debian_args"

    # --- b. the client ------------------------------------------------------
    step "b. client: one value per file per second through $sock"
    cat >client.py <<'PY'
import os, subprocess, sys, time
sock, stop = sys.argv[1], sys.argv[2]
files = sys.argv[3:]
acked = open("acked", "w", buffering=1)
refused = open("refused", "w", buffering=1)
start = int(time.time()) + 1
k = 0
while not os.path.exists(stop):
    t = start + k
    while time.time() < t:
        time.sleep(0.01)
    for i, f in enumerate(files):
        v = k * 10 + i
        r = subprocess.run(["rrdtool", "update", "--daemon", "unix:" + sock, f, "%d:%d" % (t, v)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if r.returncode == 0:
            acked.write("%s %d %d %.3f\n" % (f, t, v, time.time()))
        else:
            refused.write("%.3f %s %d %d %s\n" % (time.time(), f, t, v,
                          r.stderr.decode(errors="replace").strip().replace("\n", " ")))
    k += 1
PY
    rm -f stop acked refused
    /usr/bin/python3 client.py "$sock" stop "${files[@]}" &
    local client=$!
    sleep "$PHASE_SECS"
    acked_n() { wc -l <acked; }
    [ "$(acked_n)" -ge 10 ] || fail "the client got $(acked_n) acknowledgements from Debian's rrdcached"
    [ ! -s refused ] || fail "refused before any switch: $(cat refused)"

    # --- c. installing changes nothing --------------------------------------
    step "c. dpkg -i ${debs[*]##*/}: nothing in use changes"
    # No file of Debian's packages is in ours.
    local theirs ours
    theirs=$(dpkg -L rrdtool rrdcached librrd8 | sort -u)
    for d in "${debs[@]}"; do
        ours=$(dpkg-deb -c "$d" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' | sort -u)
        local common
        common=$(comm -12 <(echo "$theirs") <(echo "$ours"))
        [ -z "$common" ] || fail "${d##*/} ships Debian's files: $common"
    done
    dpkg -i "${debs[@]}"
    [ "$(daemon_pid)" = "$pid0" ] || fail "install restarted the daemon"
    [ "$(daemon_exe)" = /usr/bin/rrdcached ] || fail "install changed the daemon"
    debian_state "after dpkg -i"
    [ -z "$(dpkg-divert --list | grep rrdscale || true)" ] || fail "install made diversions"
    if pgrep -x rrdscale >/dev/null; then fail "install started rrdscale"; fi
    ls /etc/systemd/system/*.wants/rrdscale* 2>/dev/null && fail "install enabled units"
    if [ "$mode" = systemd ]; then
        unit_is -e rrdscale.socket disabled
        unit_is -e rrdscale.service disabled
        unit_is rrdscale.socket inactive
        unit_is rrdscale.service inactive
    fi
    [ -x /usr/lib/rrdscale/bin/rrdtool ] && is_ours_v /usr/lib/rrdscale/bin/rrdtool ||
        fail "/usr/lib/rrdscale/bin/rrdtool is not rrdscale"
    # The service wrapper: the same options as the init script's command.
    local wrapped
    wrapped=$(/usr/lib/rrdscale/rrdcached-service --print)
    echo "rrdscale.service would run: $wrapped"
    [ "${wrapped#/usr/bin/rrdscale daemon -g }" = "$(echo "${debian_args#/usr/bin/rrdcached }" |
        sed 's|/var/run/|/run/|g; s/ *$//')" ] || fail "wrapper options differ from the init script's"
    if command -v systemd-analyze >/dev/null; then
        local v
        v=$(systemd-analyze verify /lib/systemd/system/rrdscale.socket /lib/systemd/system/rrdscale.service 2>&1 |
            grep -v "Command 'man " || true)
        [ -z "$v" ] || fail "systemd-analyze verify: $v"
    fi
    rrdscale-switch status
    status_says '^rrdtool  *Debian' || fail "status does not say rrdtool is Debian's"
    local acked_before
    acked_before=$(acked_n)
    sleep 2
    [ "$(acked_n)" -gt "$acked_before" ] || fail "the client stopped during the install"

    # --- d. switch on ---------------------------------------------------------
    step "d. rrdscale-switch on"
    local on_start on_end
    on_start=$(date +%s.%N)
    rrdscale-switch on
    on_end=$(date +%s.%N)
    daemon_up || fail "no daemon after on"
    rrdscale-switch status
    is_ours_v /usr/bin/rrdtool || fail "rrdtool -v is not rrdscale's after on"
    for t in rrdupdate rrdcreate rrdinfo rrdcached; do
        [ "$(readlink /usr/bin/$t)" = /usr/bin/rrdscale ] || fail "/usr/bin/$t is not ours"
    done
    [ "$(daemon_exe)" = /usr/bin/rrdscale ] || fail "the running daemon is $(daemon_exe), not rrdscale"
    [ "$(readlink -f "$libdir/librrd.so.8")" = "$libdir/rrdscale/librrd.so.8" ] || fail "librrd.so.8 is not ours"
    local maps
    maps=$(/usr/bin/python3 -c 'import rrdtool; print(open("/proc/self/maps").read())')
    grep -q "$libdir/rrdscale/librrd.so.8" <<<"$maps" ||
        fail "python3-rrdtool does not load our librrd"
    for t in rrdtool rrdupdate rrdcreate rrdinfo rrdcached librrd.so.8; do
        status_says "^$t  *rrdscale" || fail "status: $t is not rrdscale's"
    done
    local again
    again=$(rrdscale-switch on)
    grep -q 'already' <<<"$again" || fail "a second on is not a no-op"
    [ "$(dpkg-divert --list | grep -c 'by rrdscale$')" = 6 ] || fail "not 6 diversions: $(dpkg-divert --list)"
    if [ "$mode" = systemd ]; then
        unit_is rrdscale.socket active
        unit_is rrdscale.service active
        unit_is rrdcached.service inactive
        [ "$(systemctl show -p MainPID --value rrdscale.service)" = "$(daemon_pid)" ] ||
            fail "the pid file does not name rrdscale.service's main process"
        if [ "$debian_enabled" = enabled ]; then
            unit_is -e rrdscale.socket enabled
            unit_is -e rrdscale.service enabled
            unit_is -e rrdcached.service disabled
        fi
    fi
    acked_before=$(acked_n)
    sleep "$PHASE_SECS"
    [ "$(acked_n)" -gt $((acked_before + 10)) ] || fail "the client does not get through to rrdscale's daemon"

    # --- e. switch off --------------------------------------------------------
    step "e. rrdscale-switch off"
    local off_start off_end
    off_start=$(date +%s.%N)
    rrdscale-switch off
    off_end=$(date +%s.%N)
    rrdscale-switch status
    [ "$(daemon_exe)" = /usr/bin/rrdcached ] || fail "the running daemon is $(daemon_exe) after off"
    debian_state "after off"
    [ -z "$(dpkg-divert --list | grep rrdscale || true)" ] || fail "diversions after off"
    if [ "$mode" = systemd ]; then
        unit_is rrdcached.service active
        unit_is rrdscale.service inactive failed
        [ "$(systemctl is-active rrdscale.service)" = inactive ] || fail "rrdscale.service failed at its stop"
        unit_is rrdscale.socket inactive
        unit_is -e rrdscale.socket disabled
        unit_is -e rrdscale.service disabled
        [ "$(systemctl is-enabled rrdcached.service 2>/dev/null || true)" = "$debian_enabled" ] ||
            fail "rrdcached.service's enablement was not restored"
    fi
    # Our journal holds nothing rrdcached would have to read: one segment
    # of its 16-byte header.
    ls -l "$journal"
    [ -z "$(find "$journal" -name 'journal.*' -size +16c)" ] || fail "our journal still holds values after off"
    again=$(rrdscale-switch off)
    grep -q 'nothing to do' <<<"$again" || fail "a second off is not a no-op"
    acked_before=$(acked_n)
    sleep "$PHASE_SECS"
    [ "$(acked_n)" -gt $((acked_before + 10)) ] || fail "the client does not get through to Debian's rrdcached"

    # Refusals: only during the two switches, and few.
    local r_total r_outside
    r_total=$(wc -l <refused)
    r_outside=$(awk -v a="$on_start" -v b="$on_end" -v c="$off_start" -v d="$off_end" \
        '!(($1 >= a - 1 && $1 <= b + 1) || ($1 >= c - 1 && $1 <= d + 1))' refused | wc -l)
    awk -v n="$r_total" -v a="$on_start" -v b="$on_end" -v c="$off_start" -v d="$off_end" \
        'BEGIN {printf "refused: %d updates (on took %.1f s, off %.1f s)\n", n, b - a, d - c}'
    [ "$r_outside" = 0 ] || fail "refused outside the switches: $(cat refused)"
    [ "$r_total" -le $((2 * MAX_REFUSED)) ] || fail "$r_total updates refused: $(head -n 20 refused)"
    cat refused
    # Connections refused or cut while a daemon stops: the client is told
    # (the update is not acknowledged), nothing else.
    if grep -v 'Connection refused\|No such file or directory\|error.* while talking to rrdcached' refused; then
        fail "refusals other than 'cannot connect' or 'connection closed'"
    fi

    # --- f. every acknowledged value in the files ----------------------------
    step "f. every acknowledged value is in the files (Debian's rrdtool fetch)"
    touch stop
    wait "$client"
    rrdtool flushcached --daemon "unix:$sock" "${files[@]}"
    local first last
    first=$(awk 'NR == 1 {print $2}' acked)
    last=$(awk '{print $2}' acked | sort -n | tail -n 1)
    for f in "${files[@]}"; do
        rrdtool fetch "$f" LAST -r 1 -s $((first - 1)) -e "$last" |
            awk -v f="$f" -F': ' 'NF == 2 && $2 !~ /nan/ {printf "%s %d %d\n", f, $1, $2 + 0}'
    done | sort >fetched
    awk '{print $1, $2, $3}' acked | sort >want
    local missing
    missing=$(comm -23 want fetched)
    [ -z "$missing" ] || fail "$(echo "$missing" | wc -l) acknowledged values missing, e.g. $(echo "$missing" | head -n 5)"
    echo "all $(wc -l <want) acknowledged values found ($r_total refused)"

    # --- h. the unit's protocol, without systemd ------------------------------
    # What rrdscale.service relies on, played by a small stand-in for
    # systemd: the wrapper runs with the listening socket as fd 3
    # (LISTEN_FDS) and a NOTIFY_SOCKET; the daemon must adopt the socket,
    # send READY=1, answer on it, send STOPPING=1 on SIGTERM and exit 0.
    if [ "$mode" = sysv ] && [ "${RRDSCALE_PKGTEST_NOTIFY:-1}" = 1 ]; then
        step "h. rrdscale.service's protocol: LISTEN_FDS socket, READY=1, STOPPING=1 (systemd stand-in)"
        /etc/init.d/rrdcached stop
        rrdtool create "$base/h.rrd" --step 1 DS:v:GAUGE:60:U:U RRA:LAST:0:1:100
        cat >notify.py <<'PY'
import os, signal, socket, subprocess, sys, time
sock_path, rrd = sys.argv[1], sys.argv[2]
for p in (sock_path, "/run/pkgtest-notify"):
    if os.path.exists(p):
        os.unlink(p)
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(sock_path)
os.chmod(sock_path, 0o755)
listener.listen(128)
fd = listener.detach()
if fd != 3:
    os.dup2(fd, 3)
    os.close(fd)
os.set_inheritable(3, True)
notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
notify.bind("/run/pkgtest-notify")
notify.settimeout(30)
env = dict(os.environ, LISTEN_FDS="1", LISTEN_FDNAMES="rrdcached",
           NOTIFY_SOCKET="/run/pkgtest-notify", WATCHDOG_USEC="2000000")
child = subprocess.Popen(["sh", "-c", 'export LISTEN_PID=$$; exec /usr/lib/rrdscale/rrdcached-service'],
                         env=env, pass_fds=(3,))
os.close(3)  # the daemon holds the only copy now
def expect(word):
    end = time.time() + 30
    while time.time() < end:
        try:
            msg = notify.recv(4096).decode()
        except socket.timeout:
            break
        print("notify:", msg.replace("\n", " "))
        if word in msg.split("\n"):
            return
    child.kill()
    sys.exit("no %s from the daemon (needs its sd_notify support)" % word)
expect("READY=1")
expect("WATCHDOG=1")
r = subprocess.run(["rrdtool", "update", "--daemon", "unix:" + sock_path, rrd, "N:7"])
if r.returncode != 0:
    child.kill()
    sys.exit("no update through the adopted socket")
child.send_signal(signal.SIGTERM)
expect("STOPPING=1")
status = child.wait(timeout=60)
if status != 0:
    sys.exit("the daemon exited with %d after SIGTERM" % status)
print("adopted socket, READY=1, WATCHDOG=1, STOPPING=1, exit 0")
PY
        /usr/bin/python3 notify.py /run/rrdcached.sock "$base/h.rrd" || fail "rrdscale.service's protocol"
        rm -f /run/rrdcached.sock
        /etc/init.d/rrdcached start
        daemon_up && [ "$(daemon_exe)" = /usr/bin/rrdcached ] || fail "Debian's rrdcached did not start again after h"
    fi

    # --- g. on again, then purge --------------------------------------------
    step "g. rrdscale-switch on, then dpkg --purge"
    rrdscale-switch on >/dev/null
    daemon_up || fail "no daemon after the second on"
    [ "$(daemon_exe)" = /usr/bin/rrdscale ] || fail "the daemon is not ours after the second on"
    # An upgrade (the same package again) restarts our daemon on the new
    # binary and keeps everything switched.
    local pid_before
    pid_before=$(daemon_pid)
    dpkg -i /root/pkgtest/rrdscale_*.deb
    daemon_up || fail "no daemon after the upgrade"
    [ "$(daemon_exe)" = /usr/bin/rrdscale ] || fail "the daemon is not ours after an upgrade"
    [ "$(daemon_pid)" != "$pid_before" ] || fail "the upgrade did not restart our daemon"
    [ "$(dpkg-divert --list | grep -c 'by rrdscale$')" = 6 ] || fail "an upgrade changed the diversions"
    rrdtool update --daemon "unix:$sock" "${files[0]}" N:2 || fail "our daemon takes no update after the upgrade"
    # Our daemon stopped as the init script or systemctl stop it (SIGTERM:
    # what is pending stays in our journal): off runs it once to write
    # everything, and starts no daemon (none was running).
    local t3
    t3=$(date +%s)
    rrdtool update --daemon "unix:$sock" "${files[1]}" "$t3:33" || fail "no update to our daemon"
    if [ "$mode" = systemd ]; then
        systemctl stop rrdscale.socket rrdscale.service
    else
        /etc/init.d/rrdcached stop
    fi
    [ -n "$(find "$journal" -name 'journal.*' -size +16c)" ] || fail "our journal holds nothing after a SIGTERM stop"
    rrdscale-switch off
    [ -z "$(find "$journal" -name 'journal.*' -size +16c)" ] || fail "off left values in our journal"
    if daemon_pid >/dev/null; then fail "off started a daemon although none was running"; fi
    local lu
    lu=$(rrdtool lastupdate "${files[1]}")
    grep -q "^$t3: 33" <<<"$lu" || fail "the value our stopped daemon held is not in the file: $lu"
    [ -z "$(dpkg-divert --list | grep rrdscale || true)" ] || fail "diversions after off"
    start_debian
    daemon_up || fail "Debian's rrdcached does not start"
    rrdscale-switch on >/dev/null
    daemon_up || fail "no daemon after the third on"
    [ "$(daemon_exe)" = /usr/bin/rrdscale ] || fail "the daemon is not ours after the third on"

    dpkg --purge rrdscale librrd8-rrdscale
    [ -z "$(dpkg-divert --list | grep rrdscale || true)" ] || fail "diversions after purge: $(dpkg-divert --list | grep rrdscale)"
    debian_state "after purge"
    [ "$(daemon_exe)" = /usr/bin/rrdcached ] || fail "Debian's rrdcached is not running after purge ($(daemon_exe))"
    if [ "$mode" = systemd ]; then
        unit_is rrdcached.service active
        [ -z "$(systemctl list-unit-files 'rrdscale*' --no-legend 2>/dev/null)" ] || fail "rrdscale units left after purge"
    fi
    [ ! -e /usr/lib/rrdscale ] || fail "/usr/lib/rrdscale left after purge: $(find /usr/lib/rrdscale)"
    [ ! -e /etc/default/rrdscale ] || fail "/etc/default/rrdscale left after purge"
    rrdtool lastupdate "${files[0]}" >/dev/null || fail "Debian's rrdtool fails after purge"
    rrdtool update --daemon "unix:$sock" "${files[0]}" N:1 || fail "Debian's rrdcached does not take updates after purge"
    # --- i. without Debian's packages -----------------------------------------
    # A name Debian does not have is simply provided, and taken away again.
    if [ "$mode" = sysv ]; then
        step "i. without Debian's rrdtool, rrdcached and librrd8: names provided by on, gone after off"
        /etc/init.d/rrdcached stop
        dpkg --purge --force-depends rrdcached rrdtool librrd8 >/dev/null 2>&1 || fail "could not remove Debian's packages"
        for t in rrdtool rrdupdate rrdcreate rrdinfo rrdcached; do
            [ ! -e "/usr/bin/$t" ] || fail "/usr/bin/$t still there without Debian's packages"
        done
        dpkg -i "${debs[@]}" >/dev/null
        rrdscale-switch on
        is_ours_v /usr/bin/rrdtool || fail "rrdtool is not provided by on"
        [ "$(readlink -f "$libdir/librrd.so.8")" = "$libdir/rrdscale/librrd.so.8" ] || fail "librrd.so.8 is not provided by on"
        maps=$(/usr/bin/python3 -c 'import rrdtool; print(open("/proc/self/maps").read())') ||
            fail "python3-rrdtool does not load with our library alone"
        grep -q "$libdir/rrdscale/librrd.so.8" <<<"$maps" || fail "python3-rrdtool does not map our librrd"
        status_says '^rrdcached  *rrdscale' || fail "status: rrdcached"
        rrdscale-switch off
        for t in rrdtool rrdupdate rrdcreate rrdinfo rrdcached; do
            [ ! -e "/usr/bin/$t" ] && [ ! -L "/usr/bin/$t" ] || fail "/usr/bin/$t left after off"
        done
        [ ! -e "$libdir/librrd.so.8" ] && [ ! -L "$libdir/librrd.so.8" ] || fail "librrd.so.8 left after off"
        [ ! -e "$libdir/librrd.so.8.2.1" ] && [ ! -L "$libdir/librrd.so.8.2.1" ] || fail "librrd.so.8.2.1 left after off"
        status_says '^rrdtool  *none' || fail "status: rrdtool should be none"
        dpkg --purge rrdscale librrd8-rrdscale >/dev/null
        [ -z "$(dpkg-divert --list | grep rrdscale || true)" ] || fail "diversions after the second purge"
    fi

    step "inside ($mode): all assertions passed"
}

# ---------------------------------------------------------------------------
# In the new namespaces: build the overlay root and run inside_root in it.
# ---------------------------------------------------------------------------
inside_ns() {
    local mode=$1 tmp=$2 repo=$3 out=$4
    mount --make-rprivate /
    mount -t tmpfs -o size=2g,mode=0700 pkgtest "$tmp"
    mkdir "$tmp/upper" "$tmp/work" "$tmp/root"
    mount -t overlay overlay -o "lowerdir=/,upperdir=$tmp/upper,workdir=$tmp/work" "$tmp/root"
    local r=$tmp/root
    mkdir -p "$r/root/pkgtest"
    cp "$repo"/target/debian/*.deb "$repo/scripts/package-test.sh" "$r/root/pkgtest/"
    mount -t proc proc "$r/proc"
    mount -t sysfs -o ro sysfs "$r/sys"
    # Fresh /run and /tmp: nothing of the machine's.
    mount -t tmpfs tmpfs "$r/run"
    mkdir -p "$r/run/lock"
    mount -t tmpfs tmpfs "$r/tmp"
    if [ "$mode" = sysv ]; then
        # No systemd: rrdscale-switch takes the init script's way.
        mount --rbind /dev "$r/dev"
        chroot "$r" /bin/bash /root/pkgtest/package-test.sh --inside-root sysv
        return
    fi
    # systemd as PID 1 of the PID namespace, as a container manager would
    # start it: a private /dev (the console is a file outside), our own
    # cgroup (cgroup namespace) as its cgroup2 tree, no network but
    # loopback (network namespace), and one target: the test's service,
    # whose status becomes systemd's exit status.
    mount -t tmpfs -o mode=755,nosuid tmpfs "$r/dev"
    for n in null zero full random urandom tty; do
        touch "$r/dev/$n"
        mount --bind "/dev/$n" "$r/dev/$n"
    done
    mkdir "$r/dev/pts" "$r/dev/shm"
    mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$r/dev/pts"
    ln -s pts/ptmx "$r/dev/ptmx"
    ln -s /proc/self/fd "$r/dev/fd"
    touch "$r/dev/console"
    mount --bind "$out/console" "$r/dev/console"
    mount -t cgroup2 cgroup2 "$r/sys/fs/cgroup"
    mkdir -p "$r/root/pkgtest/out"
    mount --bind "$out" "$r/root/pkgtest/out"
    cat >"$r/etc/systemd/system/pkgtest.target" <<'UNIT'
[Unit]
Description=rrdscale package test
Requires=pkgtest.service
After=pkgtest.service
UNIT
    cat >"$r/etc/systemd/system/pkgtest.service" <<'UNIT'
[Unit]
Description=rrdscale package test (scripts/package-test.sh)
DefaultDependencies=no
[Service]
Type=oneshot
TimeoutStartSec=infinity
StandardOutput=file:/root/pkgtest/out/log
StandardError=inherit
ExecStart=/bin/bash -c '/bin/bash /root/pkgtest/package-test.sh --inside-root systemd; systemctl exit $$?'
UNIT
    cd "$r"
    mkdir -p .oldroot
    pivot_root . .oldroot
    cd /
    umount -l /.oldroot
    rmdir /.oldroot
    exec env -i container=rrdscale-pkgtest PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        /lib/systemd/systemd --unit=pkgtest.target
}

# ---------------------------------------------------------------------------
# On the machine.
# ---------------------------------------------------------------------------
case "${1:-}" in
    --inside-root)
        inside_root "$2"
        exit 0
        ;;
    --inside-ns)
        inside_ns "$2" "$3" "$4" "$5"
        exit 0
        ;;
esac

[ "$(id -u)" = 0 ] || fail "must run as root (it mounts an overlay in its own namespaces)"
cd "$(dirname "$0")/.."
repo=$PWD
started=$SECONDS
if [ "${SKIP_BUILD:-0}" != 1 ]; then
    bash scripts/build-deb.sh
fi
ls target/debian/rrdscale_*.deb target/debian/librrd8-rrdscale_*.deb >/dev/null || fail "no packages in target/debian"

diversions_before=$(dpkg-divert --list | sort)
tmp=
cg=
cleanup() {
    # The namespaces are gone with their last process; so are their mounts.
    if [ -n "$cg" ] && [ -d "$cg" ]; then
        sleep 1
        find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
    fi
    [ -n "$tmp" ] || return 0
    if grep -q " $tmp" /proc/self/mountinfo; then
        echo "package-test: mounts left under $tmp" >&2
        return
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

# run_root MODE: one throw-away root, then the machine checked.
run_root() {
    local mode=$1 status=0
    tmp=$(mktemp -d /tmp/rrdscale-pkgtest.XXXXXX)
    mkdir "$tmp/mnt" "$tmp/out"
    touch "$tmp/out/console" "$tmp/out/log"
    step "throw-away root for '$mode' in $tmp/mnt (overlay of /, own namespaces)"
    if [ "$mode" = sysv ]; then
        unshare --mount --pid --net --uts --ipc --fork --kill-child -- \
            bash "$repo/scripts/package-test.sh" --inside-ns sysv "$tmp/mnt" "$repo" "$tmp/out" || status=$?
    else
        # A cgroup of its own for the container's systemd (removed below).
        cg=/sys/fs/cgroup/unified/rrdscale-pkgtest.${tmp##*.}
        [ -d /sys/fs/cgroup/unified ] || cg=/sys/fs/cgroup/rrdscale-pkgtest.${tmp##*.}
        mkdir "$cg"
        (
            echo "$BASHPID" >"$cg/cgroup.procs"
            exec timeout --kill-after=10 "${SYSTEMD_TIMEOUT:-900}" \
                unshare --cgroup --mount --pid --net --uts --ipc --fork --kill-child -- \
                bash "$repo/scripts/package-test.sh" --inside-ns systemd "$tmp/mnt" "$repo" "$tmp/out"
        ) || status=$?
        cat "$tmp/out/log"
        if [ "$status" != 0 ]; then
            echo "--- systemd's console (last 40 lines):"
            tail -n 40 "$tmp/out/console"
        fi
        # The namespace's processes may still be dying: wait until the
        # cgroup is empty, then remove it and what systemd made in it.
        local n=0
        until grep -qx 'populated 0' "$cg/cgroup.events" 2>/dev/null || [ $n -ge 100 ]; do
            sleep 0.1
            n=$((n + 1))
        done
        find "$cg" -depth -type d -exec rmdir {} + || true
        [ ! -e "$cg" ] || fail "cgroup $cg could not be removed"
        cg=
    fi

    step "outside ($mode): the machine is unchanged"
    [ "$(dpkg-divert --list | sort)" = "$diversions_before" ] || fail "the machine's diversions changed"
    ! grep -q " $tmp" /proc/self/mountinfo || fail "mounts left: $(grep " $tmp" /proc/self/mountinfo)"
    for p in /proc/[0-9]*; do
        local root
        root=$(readlink "$p/root" 2>/dev/null || true)
        case $root in "$tmp"*) fail "process ${p#/proc/} still runs in the throw-away root" ;; esac
    done
    [ -z "$(dpkg-query -W -f='${Package}\n' rrdscale librrd8-rrdscale 2>/dev/null)" ] || fail "our packages are on the machine"
    [ "$status" = 0 ] || fail "the test inside ($mode) failed (status $status)"
    rm -rf "$tmp"
    tmp=
}

for mode in ${PKGTEST_MODES:-sysv systemd}; do
    run_root "$mode"
done
step "passed in $((SECONDS - started)) s"
