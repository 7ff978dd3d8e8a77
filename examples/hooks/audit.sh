#!/bin/sh
# A tool.after command hook: the event arrives as JSON on stdin; stdout must be one JSON
# object. This one adds a short feedback line the model sees after the tool's output.
cat >/dev/null
printf '{"feedback": "[audit] command logged"}\n'
