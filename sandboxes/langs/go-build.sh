#!/bin/sh
# go-build.sh SOURCE OUTPUT: compiles and links one Go file (package main) against the standard library
# precompiled in the image (prepare-go.sh), without the go command's build cache.
set -eu
dir=/opt/rlvr-langs/go
tools="$(cat "$dir/tooldir")"
export GOMAXPROCS=1
"$tools/compile" -p main -complete -importcfg "$dir/importcfg" -trimpath "$PWD" -c=1 -pack -o main.a "$1"
"$tools/link" -importcfg "$dir/importcfg" -s -w -buildmode=exe -o "$2" main.a
rm -f main.a
