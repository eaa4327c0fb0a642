#!/usr/bin/env bash
# Refresh the catalogue (locale/pt_BR/LC_MESSAGES/django.po and djangojs.po) from the code: run after marking new
# strings, then write their Portuguese (locale/GLOSSARY.md) and run the tests (tests/portal/test_translations.py
# fails on a missing, fuzzy or stale entry). Another language: scripts/makemessages.sh pt_PT.
set -euo pipefail
cd "$(dirname "$0")/.."
lang="${1:-pt_BR}"
ignore=(--ignore=.venv --ignore=node_modules --ignore=var --ignore=tests --ignore=sdk --ignore=deploy --ignore=bench
        --ignore=build --ignore=staticfiles)
python manage.py makemessages -l "$lang" --no-obsolete --no-location "${ignore[@]}"
python manage.py makemessages -d djangojs -l "$lang" --no-obsolete --no-location "${ignore[@]}"
# The extraction date changes at every run and says nothing a translator needs: left out, so the catalogue only
# changes when its strings do.
sed -i '/^"POT-Creation-Date: /d' locale/"$lang"/LC_MESSAGES/django.po locale/"$lang"/LC_MESSAGES/djangojs.po
