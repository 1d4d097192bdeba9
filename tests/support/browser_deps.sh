#!/bin/sh
# System part of the JupyterLab browser test (tests/system/test_lab_browser.py): Debian's chromium.
# Idempotent and never fails: installs only as root when missing; otherwise says why not.
if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then
    echo "browser-deps: chromium present ($(command -v chromium || echo /usr/bin/chromium))"
    exit 0
fi
if [ "$(id -u)" != "0" ]; then
    echo "browser-deps: chromium missing and not root: the browser test will skip (apt-get install chromium)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "browser-deps: chromium missing and no apt-get: the browser test will skip"
    exit 0
fi
echo "browser-deps: installing chromium with apt-get"
if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/tmp/browser-deps-apt.log 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/tmp/browser-deps-apt.log 2>&1 \
        || echo "browser-deps: apt-get install chromium failed (see /tmp/browser-deps-apt.log): the browser test will skip"
fi
exit 0
