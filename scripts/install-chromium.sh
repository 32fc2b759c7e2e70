#!/usr/bin/env bash
# Installs Debian's Chromium for the OAuth sign-in browser test (playwright-core drives it at
# /usr/bin/chromium). Playwright's own browser download cannot work on a closed network.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" != "0" ]; then SUDO=sudo; else SUDO=; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
/usr/bin/chromium --version
