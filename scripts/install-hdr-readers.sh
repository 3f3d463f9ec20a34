#!/usr/bin/env bash
# Installs the two reference HdrHistogram log readers that the tests read
# storebench's .hlog files and results.json histograms with
# (internal/coordinator hlog tests), so "readable by HDR tools" is checked by
# tools nobody here wrote:
#   - HdrHistogram_py (PyPI hdrhistogram, module hdrh) in a venv under
#     ~/.cache/storebench/hdr-venv (STOREBENCH_HDR_VENV overrides);
#   - the Java HdrHistogram jar (Maven Central org.hdrhistogram:HdrHistogram)
#     in ~/.m2, for org.HdrHistogram.HistogramLogProcessor.
# Idempotent and fast when both are there. Exits non-zero if either is still
# missing afterwards.
set -u

py_version=0.10.8
jar_version=2.2.2
venv=${STOREBENCH_HDR_VENV:-$HOME/.cache/storebench/hdr-venv}
jar=$HOME/.m2/repository/org/hdrhistogram/HdrHistogram/$jar_version/HdrHistogram-$jar_version.jar
status=0

if "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('hdrhistogram') != '$py_version')" 2>/dev/null; then
  echo "install-hdr-readers: hdrhistogram $py_version already in $venv"
else
  echo "install-hdr-readers: pip install hdrhistogram==$py_version into $venv"
  mkdir -p "$(dirname "$venv")"
  if ! { [ -x "$venv/bin/python" ] || python3 -m venv "$venv"; } ||
    ! "$venv/bin/python" -m pip install -q "hdrhistogram==$py_version"; then
    echo "install-hdr-readers: could not install hdrhistogram $py_version (python3 -m venv $venv && $venv/bin/python -m pip install hdrhistogram==$py_version)" >&2
    status=1
  fi
fi

if [ -f "$jar" ]; then
  echo "install-hdr-readers: HdrHistogram $jar_version jar already in ~/.m2"
elif ! command -v mvn >/dev/null || ! command -v java >/dev/null; then
  echo "install-hdr-readers: java and mvn are needed for the HdrHistogram $jar_version jar (apt-get install default-jre-headless maven)" >&2
  status=1
else
  echo "install-hdr-readers: mvn dependency:get org.hdrhistogram:HdrHistogram:$jar_version"
  if ! mvn -q -B dependency:get -Dartifact="org.hdrhistogram:HdrHistogram:$jar_version" -Dtransitive=false >/dev/null || [ ! -f "$jar" ]; then
    echo "install-hdr-readers: could not fetch HdrHistogram $jar_version (mvn dependency:get -Dartifact=org.hdrhistogram:HdrHistogram:$jar_version)" >&2
    status=1
  fi
fi
exit $status
