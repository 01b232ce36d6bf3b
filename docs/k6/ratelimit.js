// Load on a rate-limited HTTP service, for rlconform to judge its
// exactness: rlconform bench --from-k6 (docs/k6.md).
//
//   k6 run --out json=gen1.json.gz docs/k6/ratelimit.js
//   rlconform bench --from-k6 gen1.json.gz --policy 100/1m
//
// Every request is tagged with its user (the identity it sends), which
// rlconform reads (--user-tag user). Settings come from the environment:
//
//   URL       the limited endpoint (default http://localhost:8080/)
//   HEADER    the header that names the client (default X-User)
//   USERS     how many users (default 100)
//   ZIPF      0 for a uniform draw, or s > 1: user k is drawn with a
//             probability proportional to (1+k)^-s (user 0 is a hot key)
//   RATE      requests per second started (default 200), for DURATION
//             (default 1m); PREALLOC VUs at first, MAXVUS at most
//   LIMITED   the status of a refusal (default 429)
//   PREFIX    starts every user id: give each run a fresh one, so that
//             no run inherits another's quota; the SAME one to every
//             generator of one run, so that they share the users
//             (default: one made in setup(), for a run on one machine)
import http from 'k6/http';
import { check } from 'k6';

const URL = __ENV.URL || 'http://localhost:8080/';
const HEADER = __ENV.HEADER || 'X-User';
const USERS = parseInt(__ENV.USERS || '100', 10);
const ZIPF = parseFloat(__ENV.ZIPF || '0');
const LIMITED = parseInt(__ENV.LIMITED || '429', 10);

export const options = {
  scenarios: {
    ratelimit: {
      // An arrival rate: requests start on time whatever the answers.
      executor: 'constant-arrival-rate',
      rate: parseInt(__ENV.RATE || '200', 10),
      timeUnit: '1s',
      duration: __ENV.DURATION || '1m',
      preAllocatedVUs: parseInt(__ENV.PREALLOC || '20', 10),
      maxVUs: parseInt(__ENV.MAXVUS || '200', 10),
    },
  },
  thresholds: {
    // A refusal is an expected answer (see the callback below): only
    // errors fail the run. rlconform judges the refusals.
    http_req_failed: ['rate<0.01'],
    checks: ['rate>0.99'],
    dropped_iterations: ['count==0'],
  },
};

// 2xx and the refusal are expected; anything else is an error.
http.setResponseCallback(http.expectedStatuses({ min: 200, max: 299 }, LIMITED));

// The cumulative weights of a Zipf draw over USERS users, computed once
// per VU.
const weights = (() => {
  if (!(ZIPF > 1)) return null;
  const w = [];
  let sum = 0;
  for (let k = 0; k < USERS; k++) {
    sum += Math.pow(1 + k, -ZIPF);
    w.push(sum);
  }
  return w.map((x) => x / sum);
})();

function drawUser() {
  if (weights === null) return Math.floor(Math.random() * USERS);
  const r = Math.random();
  let lo = 0;
  let hi = weights.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (weights[mid] < r) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// setup runs once per generator: the prefix it returns is every VU's.
export function setup() {
  return { prefix: __ENV.PREFIX || `k6-${Date.now().toString(36)}-` };
}

export default function (data) {
  const user = `${data.prefix}${drawUser()}`;
  const res = http.get(URL, {
    headers: { [HEADER]: user },
    // The user tag is how rlconform groups the decisions by user.
    tags: { user: user },
  });
  check(res, {
    'allowed or refused': (r) => (r.status >= 200 && r.status < 300) || r.status === LIMITED,
  });
}
