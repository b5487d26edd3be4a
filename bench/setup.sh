# Sourced by the bench/run_*.sh scripts: the pinned Python peers in bench/.venv and a release
# build of neardup. Run from the repository root.
if [ ! -x bench/.venv/bin/python ]; then
  python3 -m venv bench/.venv
fi
bench/.venv/bin/pip install -q "datasketch==2.0.0" "rensa==0.5.0" "simhash==2.1.2" "jieba==0.42.1" "redis==5.2.1"
