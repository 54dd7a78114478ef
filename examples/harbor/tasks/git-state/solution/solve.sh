#!/bin/bash
set -e
cd repo
git checkout -q -b feature/greeting main
printf 'Hello, Harbor!\n' > greeting.txt
git -c user.name=Oracle -c user.email=oracle@example.com commit -q -am "Greet Harbor"
