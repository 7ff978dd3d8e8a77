#!/bin/sh
# A tool.before command hook: the event JSON arrives on stdin; print one JSON object.
event=$(cat)
case "$event" in
  *'"command":"rm '*) printf '{"deny_reason": "deleting files is not allowed in this workspace"}\n' ;;
  *) printf '{}\n' ;;
esac
