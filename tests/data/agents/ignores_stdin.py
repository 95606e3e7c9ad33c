"""Closes stdin without reading it and answers at once."""

import json
import os

os.close(0)
print(json.dumps({"decision": "approve"}))
