#!/usr/bin/env bash
# Installs Debian's clickhouse-server (18.16 on bookworm) for the ClickHouse test project
# (vitest.config.ts): the tests start a private server of their own on free ports, so the packaged
# service is never started here. Without it, the `clickhouse-18` project is skipped with a reason.
set -euo pipefail
if [ -x /usr/sbin/clickhouse-server ]; then exit 0; fi
if [ "$(id -u)" != "0" ]; then SUDO=sudo; else SUDO=; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clickhouse-server >/dev/null
/usr/sbin/clickhouse-server --version 2>/dev/null || true
