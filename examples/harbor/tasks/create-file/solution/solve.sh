#!/bin/bash
set -e
printf 'Hello from forge, 6 tasks to go!\n' > hello.txt
