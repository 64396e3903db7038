#!/bin/sh
# Compiles the Go standard library's packages that programs import (and everything they import) once, into
# /opt/rlvr-langs/go (an importcfg and the packages' archives), for go-build.sh: inside a sandbox /tmp is a
# fresh tmpfs, so `go build` would compile the standard library again for every program. Also `testing` with
# the test main's dependencies (testing/internal/testdeps: function_tests' `go test` form) and, where Debian's
# golang-github-stretchr-testify-dev is installed (/usr/share/gocode), testify's assert and require.
set -eu
dest=/opt/rlvr-langs/go
mkdir -p "$dest"
work="$(mktemp -d)"
export GOCACHE="$work/cache" GOPATH="$work/gopath" GOTOOLCHAIN=local GOFLAGS=-trimpath GO111MODULE=off
extra="testing testing/internal/testdeps"
if [ -d /usr/share/gocode/src/github.com/stretchr/testify ]; then
    GOPATH=/usr/share/gocode
    extra="$extra github.com/stretchr/testify/assert github.com/stretchr/testify/require"
fi
pkgs="bufio bytes container/heap container/list container/ring cmp errors fmt io io/ioutil iter maps math
      math/big math/bits math/cmplx math/rand math/rand/v2 os regexp slices sort strconv strings sync
      sync/atomic time unicode unicode/utf8 unicode/utf16 hash/fnv hash/crc32 crypto/md5 crypto/sha256
      encoding/binary encoding/json encoding/hex encoding/base64 text/tabwriter runtime runtime/debug reflect
      log os/exec os/signal path strings unicode"
# shellcheck disable=SC2086
go list -deps -export -f '{{if .Export}}{{.ImportPath}} {{.Export}}{{end}}' $pkgs $extra > "$work/list"
: > "$dest/importcfg"
while read -r path file; do
    name="$(echo "$path" | tr '/' '_').a"
    cp "$file" "$dest/$name"
    echo "packagefile $path=$dest/$name" >> "$dest/importcfg"
done < "$work/list"
go env GOTOOLDIR > "$dest/tooldir"
rm -rf "$work"
echo "Go: $(wc -l < "$dest/importcfg") packages precompiled ($(du -sh "$dest" | cut -f1))"
