#!/bin/sh
# build-node-bins.sh DIR — build a real kubelet, kube-scheduler and
# kube-controller-manager from the Go module proxy into DIR/bin (default
# .cache/kube), once: a second call with the same version does nothing.
# `make kube-node-bins` calls it after `make kube-bins`; internal/kubenode
# runs the binaries beside internal/kubetest's etcd and kube-apiserver.
#
# The three are built in kube-bins' scratch module (DIR/src/kapi, written by
# internal/kubetest/build-bins.sh), so the packages they share with
# kube-apiserver come from the Go build cache; one `go build` links all
# three. No third-party code is kept in the repo.
set -eu

DIR=${1:-.cache/kube}
KUBE_VERSION=1.37.2 # must match internal/kubetest/build-bins.sh
GO=${GO:-go}
BIN=$DIR/bin
SRC=$DIR/src/kapi
STAMP="kubelet kube-scheduler kube-controller-manager v$KUBE_VERSION"
CMDS="kubelet kube-scheduler kube-controller-manager"

cached=1
for c in $CMDS; do
	[ -x "$BIN/$c" ] || cached=0
done
if [ $cached = 1 ] && [ "$(cat "$BIN/NODE-VERSIONS" 2>/dev/null)" = "$STAMP" ]; then
	echo "kube-node-bins: $STAMP cached in $BIN"
	exit 0
fi
if [ ! -f "$SRC/go.mod" ] || ! grep -q "k8s.io/kubernetes v$KUBE_VERSION" "$SRC/go.mod"; then
	echo "kube-node-bins: $SRC/go.mod (kube-apiserver v$KUBE_VERSION's scratch module) is missing: run make kube-bins first" >&2
	exit 1
fi
BIN=$(cd "$BIN" && pwd)
SRC=$(cd "$SRC" && pwd)
rm -f "$BIN/NODE-VERSIONS"

# A second tools file: the commands' app packages join kube-apiserver's in
# the module graph; go mod tidy adds what only they need.
{
	printf '//go:build tools\n\npackage tools\n\nimport (\n'
	for c in $CMDS; do printf '\t_ "k8s.io/kubernetes/cmd/%s/app"\n' "$c"; done
	printf ')\n'
} >"$SRC/tools_node.go"
(cd "$SRC" && $GO mod tidy)

echo "kube-node-bins: $CMDS v$KUBE_VERSION from the Go module proxy (~10 min on 2 cores with kube-apiserver's build cache warm)"
V=k8s.io/component-base/version
OUTDIR=$BIN/.node-build
rm -rf "$OUTDIR"
mkdir -p "$OUTDIR"
pkgs=""
for c in $CMDS; do pkgs="$pkgs k8s.io/kubernetes/cmd/$c"; done
start=$(date +%s)
# shellcheck disable=SC2086 # pkgs is a word list
(cd "$SRC" && $GO build -ldflags "-s -w -X $V.gitVersion=v$KUBE_VERSION -X $V.gitMajor=1 -X $V.gitMinor=37" -o "$OUTDIR/" $pkgs) &
pid=$!
while kill -0 $pid 2>/dev/null; do
	i=0
	while [ $i -lt 30 ] && kill -0 $pid 2>/dev/null; do sleep 1; i=$((i + 1)); done
	kill -0 $pid 2>/dev/null && echo "kube-node-bins: building ... $(($(date +%s) - start)) s"
done
if ! wait $pid; then
	echo "kube-node-bins: build failed" >&2
	exit 1
fi
for c in $CMDS; do mv "$OUTDIR/$c" "$BIN/$c"; done
rmdir "$OUTDIR"
echo "$STAMP" >"$BIN/NODE-VERSIONS"
echo "kube-node-bins: built $CMDS in $(($(date +%s) - start)) s into $BIN"
