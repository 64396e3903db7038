#!/bin/sh
# Installs the JVM, Node.js, TypeScript, Go, Rust, PHP, Ruby, Lua, Perl, R, C# (Mono) and D (GDC) from Debian
# packages (no other registry), and the libraries the datasets' harnesses provide: Boost and OpenSSL headers,
# lodash for Node.js, javatuples for Java, luaunit, Test::Deep, Data::Compare and PHP's common extensions.
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends default-jdk-headless nodejs node-typescript golang-go rustc \
    php-cli ruby lua5.4 perl r-base-core mono-mcs gdc \
    libboost-dev libssl-dev node-lodash libjavatuples-java
# What the datasets' Lua, Perl and PHP tests and programs load: MultiPL-E's luaunit (Lua) and Test::Deep (Perl),
# MBXP's Data::Compare (Perl), and PHP's common extensions (mbstring, bcmath, intl, xml).
apt-get install -y --no-install-recommends lua-unit libtest-deep-perl libdata-compare-perl \
    php-mbstring php-bcmath php-intl php-xml
# Rust's crates of HumanEval-X's Cargo project (rand, regex, md5): their sources and cargo, which builds them once
# (langs/rust-crates.sh).
apt-get install -y --no-install-recommends cargo librust-rand-dev librust-regex-dev librust-md5-dev
# testify for Go's `go test` form (HumanEval-X's tests: assert.New(t)), with its dependencies (prepare-go.sh).
apt-get install -y --no-install-recommends golang-github-stretchr-testify-dev
apt-get clean
rm -rf /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/*
