#!/bin/sh
# Installs the JVM, Node.js, TypeScript, Go and Rust from Debian packages (no other registry).
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends default-jdk-headless nodejs node-typescript golang-go rustc
apt-get clean
rm -rf /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/*
