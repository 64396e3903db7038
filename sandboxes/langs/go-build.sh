#!/bin/sh
# go-build.sh SOURCE OUTPUT [SOURCE...]: compiles one package main (SOURCE first, then the others: the order of
# its files is the order of their package-level initialisation) and links it against the standard library and
# the libraries precompiled in the image (prepare-go.sh), without the go command's build cache.
set -eu
dir=/opt/rlvr-langs/go
tools="$(cat "$dir/tooldir")"
export GOMAXPROCS=1
first="$1"
out="$2"
shift 2
"$tools/compile" -p main -complete -importcfg "$dir/importcfg" -trimpath "$PWD" -c=1 -pack -o main.a "$first" "$@"
"$tools/link" -importcfg "$dir/importcfg" -s -w -buildmode=exe -o "$out" main.a
rm -f main.a
