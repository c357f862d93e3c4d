#!/usr/bin/env bash
# A failure's replay line runs the same history: the same seed and history run twice print the
# same totals (system calls, thread switches, crash points), byte for byte. (That a defect is
# found, shrunk and printed is the mutation gate's sim entries.)
set -euo pipefail
sim=$1
history='n22433633,m1269456320,n1867274152,c1618881670,f1146866983,t2532023576,n314953860,u1510419565,a2597157551,c3220202066,i1558367764,r1582031093,s816810478,x787741719'
one=$("$sim" --seed 9 --history "$history" | sed 's/, [0-9.]* s$//')
two=$("$sim" --seed 9 --history "$history" | sed 's/, [0-9.]* s$//')
echo "$one"
[ "$one" = "$two" ] || { echo "replay differs: $two"; exit 1; }
# the totals name the parts of the history: its crash points and its flip
grep -Eq '^sim: 1 histories, 14 operations, 3 crash points, .* 1 bits flipped' <<<"$one" ||
    { echo "unexpected totals"; exit 1; }
