#!/usr/bin/env bash
# Installs what the sae controller needs on a fresh Debian/Ubuntu machine, then every sae package
# into ./.venv (idempotent: a second run only checks). Node software (Ceph, Spark, Prometheus, ...)
# is installed by the deployers themselves, on the nodes of a reservation.
set -euo pipefail
cd "$(dirname "$0")"
if [ "$(id -u)" != 0 ]; then echo "setup.sh: run as root (apt and the local cluster need it)" >&2; exit 2; fi
# What must hold before anything is installed (sae plan checks the rest: namespaces, cgroups, ...).
. /etc/os-release 2>/dev/null || true
case " ${ID:-} ${ID_LIKE:-} " in
  *" debian "*|*" ubuntu "*) ;;
  *) echo "setup.sh: ${PRETTY_NAME:-this system} is not Debian or Ubuntu: sae installs Debian packages (use Debian 12+ or Ubuntu 22.04+, a VM of one will do)" >&2; exit 2;;
esac
command -v apt-get >/dev/null || { echo "setup.sh: apt-get is missing: sae installs Debian packages" >&2; exit 2; }
free_kib=$(df -Pk . | awk 'NR==2 {print $4}')
if [ "${free_kib:-0}" -lt $((4 * 1024 * 1024)) ]; then
  echo "setup.sh: $((free_kib / 1024)) MiB free here; the virtualenv and node software need 4 GiB: free some disk" >&2; exit 2
fi
APT_PACKAGES="python3 python3-venv python3-dev build-essential openssh-client openssh-server rsync
  iproute2 util-linux procps curl openjdk-17-jdk-headless libjna-java maven"
missing=""
for p in $APT_PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup.sh: installing$missing"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
fi
PY=/usr/bin/python3
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=".venv/.sae-installed"
want="$(cat requirements.txt */pyproject.toml | sha256sum | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/pip install -q --upgrade pip "setuptools>=77,<82"
  # PyPI has pyspark only as a source archive; building its wheel (~20 s, one core) runs while
  # everything that does not need it installs.
  wheels="$(mktemp -d)"
  .venv/bin/pip wheel -q --no-deps -w "$wheels" "$(grep '^pyspark' requirements.txt)" &
  building=$!
  trap 'kill "$building" 2>/dev/null || true; rm -rf "$wheels"' EXIT
  grep -v '^pyspark' requirements.txt > "$wheels/others.txt"
  # Path-based editable installs: the default finder loses to the distribution folders
  # (metareserve/, ...) as namespace packages when Python runs from the repository root.
  # Built with the venv's setuptools (pinned above as the packages' build-system asks): an
  # isolated build environment per package took ~15 s of a fresh setup.
  editable=(--no-build-isolation --config-settings editable_mode=compat)
  # setuptools warns in 14 lines per package that compat mode is transitional (the pin above
  # keeps it): 84 of the first command's 120 lines of output
  export PYTHONWARNINGS="ignore:Compat editable installs${PYTHONWARNINGS:+,$PYTHONWARNINGS}"
  .venv/bin/pip install -q -r "$wheels/others.txt" "${editable[@]}" \
    -e ./metareserve -e ./spark_deploy -e ./rados_deploy -e ./data_deploy -e ./monitor_deploy
  wait "$building" || { echo "setup.sh: building pyspark's wheel failed (see above)" >&2; exit 1; }
  .venv/bin/pip install -q --find-links "$wheels" -r requirements.txt "${editable[@]}" -e ./experiments
  echo "$want" > "$stamp"
fi
echo "setup.sh: ready (.venv/bin/sae, .venv/bin/metareserve, ...)"
