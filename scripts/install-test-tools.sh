#!/usr/bin/env bash
# Installs the shells the CLI completion tests check scripts with (`zsh -n`, `fish -n`), and nginx,
# the proxy docker-compose.yml puts in front of three processes (test/deploy/proxy.test.ts runs
# deploy/nginx.conf), from Debian's packages. bash is always there.
set -euo pipefail
missing=()
for sh in zsh fish; do command -v "$sh" >/dev/null 2>&1 || missing+=("$sh"); done
[ -x /usr/sbin/nginx ] || missing+=(nginx-light)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != "0" ]; then SUDO=sudo; else SUDO=; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
