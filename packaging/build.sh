#!/usr/bin/env bash
# Build the wheel (with the demo vault under share/sidenote/) into dist/, and install the desktop entry and icon
# for the current user when asked: packaging/build.sh [--install-desktop-entry]
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip wheel --no-deps -w dist .
if [ "${1:-}" = "--install-desktop-entry" ]; then
  apps="${XDG_DATA_HOME:-$HOME/.local/share}/applications"
  icons="${XDG_DATA_HOME:-$HOME/.local/share}/icons/hicolor/scalable/apps"
  mkdir -p "$apps" "$icons"
  cp resources/sidenote.desktop "$apps/"
  cp resources/icons/sidenote.svg "$icons/sidenote.svg"
  echo "installed $apps/sidenote.desktop"
fi
ls -l dist/
