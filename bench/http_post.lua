-- wrk script: POST /v1/batches with a unique batch_id per request and N changes per batch.
-- usage: wrk -t2 -c64 -d15s --latency -s bench/http_post.lua http://127.0.0.1:PORT -- N [RUN [key]]
-- N changes per batch (default 1000); RUN makes batch ids unique across runs (default: time);
-- `key`: each request also carries `Idempotency-Key: <its batch_id>`, which HAProxy in front of
-- replicas hashes (ops/cluster/haproxy.cfg.in, bench/pg_scale.sh).

local counter = 0
local threads = {}
local body_tail, run, key_headers
changes = 0 -- global: done() reads it from a thread

local function build_changes(n)
  local parts = {}
  for i = 1, n do
    parts[i] = string.format('{"id":"c%d","key":"key:%d","size":%d}', i, i * 7919, 1 + i % 9)
  end
  return "[" .. table.concat(parts, ",") .. "]"
end

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  changes = tonumber(args[1] or "1000")
  run = args[2] or tostring(os.time())
  body_tail = '","changes":' .. build_changes(changes) .. '}'
  non200 = 0
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  if args[3] == "key" then
    key_headers = {["Content-Type"] = "application/json"}
  end
end

function request()
  counter = counter + 1
  local id = 'b-' .. run .. '-' .. tid .. '-' .. counter
  local body = '{"batch_id":"' .. id .. body_tail
  if key_headers then
    key_headers["Idempotency-Key"] = id
    return wrk.format("POST", "/v1/batches", key_headers, body)
  end
  return wrk.format("POST", "/v1/batches", nil, body)
end

function response(status, headers, body)
  if status ~= 200 then
    non200 = non200 + 1
  end
end

function done(summary, latency, requests)
  local bad = 0
  for _, t in ipairs(threads) do
    bad = bad + (t:get("non200") or 0)
  end
  local n = tonumber(threads[1]:get("changes"))
  local secs = summary.duration / 1e6
  local ok = summary.requests - bad
  io.write(string.format(
    '{"changes_per_batch":%d,"requests":%d,"non_200":%d,"errors":%d,"seconds":%.2f,' ..
    '"requests_per_s":%.1f,"changes_per_s":%.0f,"p50_ms":%.2f,"p99_ms":%.2f,' ..
    '"p999_ms":%.2f,"max_ms":%.2f}\n',
    n, summary.requests, bad,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    secs, ok / secs, ok * n / secs, latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, latency:percentile(99.9) / 1000, latency.max / 1000))
end
