#!/bin/sh
# build-bins.sh DIR — build a real kube-apiserver and etcd from the Go module
# proxy into DIR/bin (default .cache/kube), once: a second call with the same
# versions does nothing. `make kube-bins` calls it; internal/kubetest runs
# the binaries (docs/sources.md §11: this recipe, measured).
#
# Neither binary is on the Go module proxy as a `go install`-able command
# (k8s.io/kubernetes and etcd's server module carry replace directives), so
# each is built inside a scratch module generated here under DIR/src: it
# requires the upstream module and pins every module the upstream go.mod
# replaces to the matching release. No third-party code is kept in the repo.
set -eu

DIR=${1:-.cache/kube}
KUBE_VERSION=1.37.2   # kube-apiserver (k8s.io/kubernetes v1.37.2)
STAGING_VERSION=0.37.2 # the staging modules (k8s.io/api, client-go, ...) of that release
ETCD_VERSION=3.6.16   # go.etcd.io/etcd/server/v3
GO=${GO:-go}

BIN=$DIR/bin
STAMP="kube-apiserver v$KUBE_VERSION, etcd v$ETCD_VERSION"
if [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/etcd" ] && [ "$(cat "$BIN/VERSIONS" 2>/dev/null)" = "$STAMP" ]; then
	echo "kube-bins: $STAMP cached in $BIN"
	exit 0
fi
mkdir -p "$BIN" "$DIR/src"
BIN=$(cd "$BIN" && pwd)
SRC=$(cd "$DIR/src" && pwd)
rm -f "$BIN/VERSIONS"

# build NAME DIR PKG LDFLAGS: go build PKG in DIR to $BIN/NAME, printing the
# elapsed time every 30 s (a cold kube-apiserver build takes ~6 min on 2 cores).
build() {
	name=$1 dir=$2 pkg=$3 ldflags=$4
	start=$(date +%s)
	(cd "$dir" && $GO build -ldflags "$ldflags" -o "$BIN/$name.tmp" "$pkg") &
	pid=$!
	while kill -0 $pid 2>/dev/null; do
		i=0
		while [ $i -lt 30 ] && kill -0 $pid 2>/dev/null; do sleep 1; i=$((i + 1)); done
		kill -0 $pid 2>/dev/null && echo "kube-bins: building $name ... $(($(date +%s) - start)) s"
	done
	if ! wait $pid; then
		echo "kube-bins: building $name failed" >&2
		exit 1
	fi
	mv "$BIN/$name.tmp" "$BIN/$name"
	echo "kube-bins: built $BIN/$name in $(($(date +%s) - start)) s"
}

# modulefile MODULE VERSION: the module's own go.mod from the proxy.
modulefile() {
	$GO mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p'
}

# replaces GOMOD VERSION: the modules GOMOD's replace block names, each pinned to VERSION.
replaces() {
	echo "replace ("
	awk '/^replace \(/{f=1;next} f&&/^\)/{f=0} f&&NF{print "\t"$1" => "$1" v'"$2"'"}' "$1"
	echo ")"
}

if [ ! -x "$BIN/etcd" ] || ! "$BIN/etcd" --version 2>/dev/null | grep -q "etcd Version: $ETCD_VERSION"; then
	echo "kube-bins: etcd v$ETCD_VERSION from the Go module proxy (cold: ~1 min, 26 MB)"
	mkdir -p "$SRC/etcd"
	gomod=$(modulefile go.etcd.io/etcd/server/v3 "v$ETCD_VERSION")
	{
		printf 'module etcdbin\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 v%s\n\n' "$ETCD_VERSION"
		replaces "$gomod" "$ETCD_VERSION"
	} >"$SRC/etcd/go.mod"
	printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >"$SRC/etcd/tools.go"
	(cd "$SRC/etcd" && $GO mod tidy)
	build etcd "$SRC/etcd" go.etcd.io/etcd/server/v3 "-s -w"
fi

if [ ! -x "$BIN/kube-apiserver" ] || [ "$("$BIN/kube-apiserver" --version 2>/dev/null)" != "Kubernetes v$KUBE_VERSION" ]; then
	echo "kube-bins: kube-apiserver v$KUBE_VERSION from the Go module proxy (cold: ~6 min on 2 cores, 114 MB)"
	mkdir -p "$SRC/kapi"
	gomod=$(modulefile k8s.io/kubernetes "v$KUBE_VERSION")
	{
		printf 'module kapi\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes v%s\n\n' "$KUBE_VERSION"
		replaces "$gomod" "$STAGING_VERSION"
	} >"$SRC/kapi/go.mod"
	printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver/app"\n' >"$SRC/kapi/tools.go"
	(cd "$SRC/kapi" && $GO mod tidy)
	V=k8s.io/component-base/version
	build kube-apiserver "$SRC/kapi" k8s.io/kubernetes/cmd/kube-apiserver \
		"-s -w -X $V.gitVersion=v$KUBE_VERSION -X $V.gitMajor=1 -X $V.gitMinor=37"
fi

echo "$STAMP" >"$BIN/VERSIONS"
echo "kube-bins: $STAMP ready in $BIN"
