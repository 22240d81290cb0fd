#!/bin/sh
# test_report.sh <junit.xml> <start-epoch> <title> — after a ctest run
# (--output-junit), prints its wall time and the five slowest tests.
xml=$1
start=$2
title=$3
end=$(date +%s)
echo "== $title: wall time $((end - start)) s; the five slowest tests:"
if [ -f "$xml" ]; then
    # <testcase name="base/test_json" classname="..." time="0.12" status="run">
    tr '\n' ' ' <"$xml" | grep -o '<testcase [^>]*>' |
        sed -n 's/.*name="\([^"]*\)".*time="\([0-9.]*\)".*/\2 \1/p' |
        sort -rn | head -5 | awk '{ printf "   %8.2f s  %s\n", $1, $2 }'
else
    echo "   (no $xml)"
fi
