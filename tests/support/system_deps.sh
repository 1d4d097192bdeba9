#!/bin/sh
# System packages for the deployment test tiers (tests/support/slurm.py, tests/support/sshd.py, tests/support/netns.py):
# a real single-node Slurm (slurm-wlm + munge), sshd/ssh, and iproute2 (ip netns).
#
# Idempotent and fast when everything is there (command -v / dpkg -s, no network).
# As root with apt-get available, installs what is missing (one `apt-get update`).
# Never fails the build: when it cannot install (not root, no apt-get, apt fails), it
# prints which test tiers will skip and why, and exits 0. The tests themselves skip
# with a message of their own (slurm_available(), sshd_available(), netns_available()).
#
# Usage: sh tests/support/system_deps.sh        (the Makefile's test target calls it)

PACKAGES="slurm-wlm munge openssh-server openssh-client iproute2"

have_cmd() {
    command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]
}

have_pkg() {
    dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'
}

# The commands the tests run, by package (a package counts as present when dpkg says so,
# or, without dpkg, when its commands are on the PATH).
cmds_for() {
    case "$1" in
        slurm-wlm) echo "slurmctld slurmd sbatch squeue scancel sinfo" ;;
        munge) echo "munged munge" ;;
        openssh-server) echo "sshd" ;;
        openssh-client) echo "ssh ssh-keygen" ;;
        iproute2) echo "ip" ;;
    esac
}

missing=""
for pkg in $PACKAGES; do
    ok=1
    for c in $(cmds_for "$pkg"); do
        have_cmd "$c" || ok=0
    done
    if command -v dpkg >/dev/null 2>&1 && ! have_pkg "$pkg"; then
        ok=0
    fi
    [ "$ok" = 1 ] || missing="$missing $pkg"
done
missing="${missing# }"

if [ -z "$missing" ]; then
    exit 0
fi

tiers_skipping() {
    # $1: the packages still missing
    out=""
    case " $1 " in
        *" slurm-wlm "*|*" munge "*) out="$out Slurm tests (tests/support/slurm.py);" ;;
    esac
    case " $1 " in
        *" openssh-server "*|*" openssh-client "*|*" iproute2 "*) out="$out SSH tests (tests/support/sshd.py);" ;;
    esac
    case " $1 " in
        *" iproute2 "*) out="$out multi-host tests (tests/support/netns.py);" ;;
    esac
    echo "${out# }"
}

skip_note() {
    echo "system_deps: missing $missing: $1; these test tiers will skip: $(tiers_skipping "$missing")"
}

if [ "$(id -u)" != 0 ]; then
    skip_note "not root, cannot apt-get install (run as root, or: apt-get install $missing)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    skip_note "no apt-get on this system"
    exit 0
fi

echo "system_deps: installing $missing"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -q >/dev/null; then
    skip_note "apt-get update failed"
    exit 0
fi
# Debian's maintainer scripts try to start services; there is no init system to do that here
# (and we start our own daemons in the tests), so refuse service starts while installing.
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
    trap 'rm -f "$policy"' EXIT
    trap 'rm -f "$policy"; exit 130' INT TERM
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && made_policy=1
fi
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
rc=$?
if [ "$made_policy" = 1 ]; then
    rm -f "$policy"
    trap - EXIT INT TERM
fi
if [ "$rc" != 0 ]; then
    skip_note "apt-get install failed (exit $rc)"
    exit 0
fi
still=""
for pkg in $missing; do
    have_pkg "$pkg" || still="$still $pkg"
done
if [ -n "$still" ]; then
    missing="${still# }"
    skip_note "still not installed after apt-get"
fi
exit 0
