#!/bin/sh
# Compiles the Go standard library's packages that programs import (and everything they import) once, into
# /opt/rlvr-langs/go (an importcfg and the packages' archives), for go-build.sh: inside a sandbox /tmp is a
# fresh tmpfs, so `go build` would compile the standard library again for every program. Also `testing` with
# the test main's dependencies (testing/internal/testdeps: function_tests' `go test` form) and, where Debian's
# golang-github-stretchr-testify-dev is installed (/usr/share/gocode), testify's assert and require.
# prepare-go.sh [OUT [MOUNT]]: OUT (default /opt/rlvr-langs/go) gets the files, whose paths in importcfg are as a
# sandbox sees OUT: MOUNT (default OUT). The bubblewrap backend runs it on its host, for the host's Go
# (verifier_service/sandbox/bwrap.py). A package of the list that this Go does not have (an older Go: cmp, slices,
# maps, iter, math/rand/v2) is left out (`go list -e`): a program that imports it fails to compile, as under
# `go build` with this Go.
set -eu
dest="${1:-/opt/rlvr-langs/go}"
mount="${2:-$dest}"
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
go list -e -deps -export -f '{{if .Export}}{{.ImportPath}} {{.Export}}{{end}}' $pkgs $extra > "$work/list"
: > "$dest/importcfg"
while read -r path file; do
    name="$(echo "$path" | tr '/' '_').a"
    cp "$file" "$dest/$name"
    echo "packagefile $path=$mount/$name" >> "$dest/importcfg"
done < "$work/list"
go env GOTOOLDIR > "$dest/tooldir"
if grep -q '^packagefile github.com/stretchr/testify/assert=' "$dest/importcfg"; then
    # testify's version, for its probe (kinds/languages.py): a bubblewrap sandbox has no dpkg database
    v="$(dpkg-query -W -f '${Version}' golang-github-stretchr-testify-dev 2>/dev/null || true)"
    echo "${v:-unknown (not a Debian package)}" > "$dest/testify.version"
fi
rm -rf "$work"
echo "Go: $(wc -l < "$dest/importcfg") packages precompiled ($(du -sh "$dest" | cut -f1))"
