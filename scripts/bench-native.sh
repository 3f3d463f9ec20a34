#!/usr/bin/env bash
# Side by side with the native tools, in one go, on one server instance
# each: redis-benchmark vs storebench's setget workload, pgbench -S vs
# storebench's pointselect workload, sysbench oltp_read_only and
# oltp_write_only vs storebench's oltp workload. Each pair runs in alternating order
# over ROUNDS rounds; the script prints every figure and the ratio
# storebench/native of the means (goal: >= 1.0).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-bin/storebench}
rounds=${ROUNDS:-2}
out=$(mktemp -d)
cleanup() { for s in redis postgres mariadb nginx; do $bin server stop "$s" >/dev/null 2>&1 || true; done; rm -rf "$out"; }
trap cleanup EXIT

field() { python3 -c 'import json,glob,sys; r=json.load(open(glob.glob(sys.argv[1]+"/*/results.json")[0])); t=r["targets"][0]; s=[x for x in t["steps"] if x["phase"]==sys.argv[2]]; print(s[0]["metrics"][sys.argv[3]] if s and t["status"]=="ok" else "FAILED:"+t.get("reason",""))' "$@"; }
mean() { python3 -c 'import sys; v=[float(x) for x in sys.argv[1:]]; print(sum(v)/len(v))' "$@"; }
ratio() { python3 -c 'import sys; print("%.3f" % (float(sys.argv[1])/float(sys.argv[2])))' "$1" "$2"; }

echo "== Redis: redis-benchmark -t set,get -n 200000 -c 50 vs storebench setget (same server, appendfsync no)"
uri=$($bin server start redis --durability async --uri-only)
port=$(echo "$uri" | sed -E 's#.*:([0-9]+)/.*#\1#')
# The managed server's generated password (redis://:PASSWORD@...).
pw=$(echo "$uri" | sed -nE 's#^[a-z]+://[^:/@]*:([^@]*)@.*#\1#p')
printf '%-4s %-4s %14s %14s %8s\n' P op native/s storebench/s ratio
for P in 1 16; do
  declare -a nset=() nget=() sset=() sget=()
  for r in $(seq "$rounds"); do
    native() {
      csv=$(redis-benchmark -h 127.0.0.1 -p "$port" -a "$pw" --no-auth-warning -t set,get -n 200000 -c 50 -P "$P" -q --csv)
      nset+=("$(echo "$csv" | awk -F'"' '$2=="SET"{print $4}')"); nget+=("$(echo "$csv" | awk -F'"' '$2=="GET"{print $4}')")
    }
    ours() {
      d="$out/redis-P$P-$r"
      $bin run native-redis --targets "$uri" --set setget.pipeline="$P" --out "$d" --quiet 2>/dev/null || true
      sset+=("$(field "$d" set requests_per_s)"); sget+=("$(field "$d" get requests_per_s)")
    }
    if [ $((r % 2)) -eq 1 ]; then native; ours; else ours; native; fi
  done
  ns=$(mean "${nset[@]}"); ng=$(mean "${nget[@]}"); ss=$(mean "${sset[@]}"); sg=$(mean "${sget[@]}")
  printf '%-4s %-4s %14.0f %14.0f %8s\n' "$P" SET "$ns" "$ss" "$(ratio "$ss" "$ns")"
  printf '%-4s %-4s %14.0f %14.0f %8s\n' "$P" GET "$ng" "$sg" "$(ratio "$sg" "$ng")"
done
$bin server stop redis >/dev/null

echo
echo "== PostgreSQL: pgbench -S -c 8 -j 2 -T 10 -M prepared vs storebench pointselect (same server and tables)"
uri=$($bin server start postgres --durability async --uri-only)
port=$(echo "$uri" | sed -E 's#.*:([0-9]+)/.*#\1#')
pw=$(echo "$uri" | sed -nE 's#^[a-z]+://[^:/@]*:([^@]*)@.*#\1#p')
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=storebench PGDATABASE=storebench PGPASSWORD=$pw
pgbench -i -s 1 -q >/dev/null 2>&1
declare -a npg=() spg=()
for r in $(seq "$rounds"); do
  native() { npg+=("$(pgbench -S -c 8 -j 2 -T 10 -M prepared -n 2>/dev/null | awk '/^tps/{print $3; exit}')"); }
  ours() {
    d="$out/pg-$r"
    $bin run native-pgbench --targets "$uri" --out "$d" --quiet 2>/dev/null || true
    spg+=("$(field "$d" select tps)")
  }
  if [ $((r % 2)) -eq 1 ]; then native; ours; else ours; native; fi
done
np=$(mean "${npg[@]}"); sp=$(mean "${spg[@]}")
printf '%-9s %14s %14s %8s\n' "" native/s storebench/s ratio
printf '%-9s %14.0f %14.0f %8s\n' "SELECT" "$np" "$sp" "$(ratio "$sp" "$np")"

echo
echo "== HTTP: ab -n 20000 -c 100 (with and without -k) and wrk -c 100 vs storebench http (same nginx, same page)"
uri=$($bin server start nginx --uri-only)
declare -a nab=() nabk=() nwrk=() sclose=() skeep=()
for r in $(seq "$(( rounds > 3 ? rounds : 3 ))"); do
  native() {
    nab+=("$(ab -n 20000 -c 100 "$uri" 2>/dev/null | awk '/^Requests per second/{print $4}')")
    nabk+=("$(ab -k -n 20000 -c 100 "$uri" 2>/dev/null | awk '/^Requests per second/{print $4}')")
    nwrk+=("$(wrk -t 2 -c 100 -d 5s "$uri" 2>/dev/null | awk '/^Requests\/sec/{print $2}')")
  }
  ours() {
    d="$out/http-$r"
    $bin run native-http --targets "$uri" --out "$d" --quiet 2>/dev/null || true
    sclose+=("$(field "$d" close requests_per_s)"); skeep+=("$(field "$d" keepalive requests_per_s)")
  }
  if [ $((r % 2)) -eq 1 ]; then native; ours; else ours; native; fi
done
na=$(mean "${nab[@]}"); nk=$(mean "${nabk[@]}"); nw=$(mean "${nwrk[@]}"); sc=$(mean "${sclose[@]}"); sk=$(mean "${skeep[@]}")
printf '%-22s %14s %14s %8s\n' "" native/s storebench/s ratio
printf '%-22s %14.0f %14.0f %8s\n' "ab (new connection)" "$na" "$sc" "$(ratio "$sc" "$na")"
printf '%-22s %14.0f %14.0f %8s\n' "ab -k (keep-alive)" "$nk" "$sk" "$(ratio "$sk" "$nk")"
printf '%-22s %14.0f %14.0f %8s\n' "wrk (keep-alive)" "$nw" "$sk" "$(ratio "$sk" "$nw")"
$bin server stop nginx >/dev/null

echo
echo "== sysbench oltp_read_only / oltp_write_only --threads=8 --time=10 --rand-type=uniform vs storebench oltp (same server, same 3 x 10000-row tables)"
# The tables are prepared once by storebench (sysbench's schema); every
# read_only round runs before any write_only round, as storebench checks
# each point select's c against its id and sysbench's writes are random.
srounds=$(( rounds < 3 ? 3 : rounds ))
sysb_field() { python3 -c 'import json,glob,sys; r=json.load(open(glob.glob(sys.argv[1]+"/*/results.json")[0])); t=r["targets"][0]; s=[x for x in t["steps"] if x["phase"]==sys.argv[2]]; print(s[0]["metrics"]["tps"] if s and t["status"]=="ok" else "FAILED:"+t.get("reason",""))' "$@"; }
printf '%-9s %-11s %14s %14s %8s\n' server phase sysbench/s storebench/s ratio
for srv in mariadb postgres; do
  uri=$($bin server start "$srv" --durability async --uri-only)
  # host, port, user, password and database of the managed server's URI
  # (its password is generated; it goes to sysbench by argument, never to
  # the screen or a file).
  read -r host port user pw db < <(python3 -c 'import sys,urllib.parse as u; p=u.urlparse(sys.argv[1]); print(p.hostname, p.port, p.username, u.unquote(p.password or ""), p.path.strip("/"))' "$uri")
  drv=mysql; [ "$srv" = postgres ] && drv=pgsql
  sb=(--db-driver=$drv --$drv-host="$host" --$drv-port="$port" --$drv-user="$user" --$drv-password="$pw" --$drv-db="$db"
      --tables=3 --table-size=10000 --threads=8 --time=10 --rand-type=uniform)
  $bin run native-sysbench --targets "$uri" --set oltp.phases=prepare --out "$out/sb-$srv-prep" --quiet 2>/dev/null
  for phase in read_only write_only; do
    declare -a nat=() sto=()
    for r in $(seq "$srounds"); do
      native() { nat+=("$(sysbench "oltp_$phase" "${sb[@]}" run 2>/dev/null | awk '/transactions:/ && !n {gsub(/\(/,"",$3); print $3; n=1}')"); }
      ours() {
        d="$out/sb-$srv-$phase-$r"
        $bin run native-sysbench --targets "$uri" --set oltp.phases="$phase" --out "$d" --quiet 2>/dev/null || true
        sto+=("$(sysb_field "$d" "$phase")")
      }
      if [ $((r % 2)) -eq 1 ]; then native; ours; else ours; native; fi
    done
    echo "  $srv $phase rounds: sysbench ${nat[*]}; storebench ${sto[*]}"
    n=$(mean "${nat[@]}"); s=$(mean "${sto[@]}")
    printf '%-9s %-11s %14.0f %14.0f %8s\n' "$srv" "$phase" "$n" "$s" "$(ratio "$s" "$n")"
  done
  $bin server stop "$srv" >/dev/null
done
