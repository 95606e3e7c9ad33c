"""Records its start and end times in $TIMES_DIR, sleeping in between: for concurrency tests."""

import json
import os
import sys
import time

request = json.load(sys.stdin)
start = time.time()
time.sleep(float(os.environ.get("SLEEP_S", "0.3")))
end = time.time()
name = f"{request['id']}-{request['attempt']}-{os.getpid()}"
with open(os.path.join(os.environ["TIMES_DIR"], name), "w") as handle:
    handle.write(f"{start} {end}")
print(json.dumps({"decision": "approve"}))
