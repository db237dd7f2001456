#!/usr/bin/env bash
# Builds rrdscale's Debian packages into target/debian/:
#   rrdscale_<v>_<arch>.deb           /usr/bin/rrdscale, rrdscale-switch, the
#                                     rrdtool/rrdcached names, units, defaults
#   librrd8-rrdscale_<v>_<arch>.deb   the drop-in librrd.so.8, in a private dir
#   *-dbgsym_<v>_<arch>.ddeb          their debug info (/usr/lib/debug/.build-id)
# with dpkg-deb from the files in packaging/deb/ (docs/install.md says why
# not cargo-deb). Needs dpkg-dev and binutils (strip, objcopy, readelf).
#
#   bash scripts/build-deb.sh            # cargo build, then package
#   SKIP_BUILD=1 bash scripts/build-deb.sh   # package what target/release holds
#
# Man pages and shell completions come from `rrdscale generate-docs DIR`
# (every file it writes is packaged). If it fails the build fails;
# RRDSCALE_DEB_ALLOW_NO_DOCS=1 builds without them (with a loud warning).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

for tool in dpkg-deb dpkg-shlibdeps dpkg-architecture objcopy strip readelf; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "build-deb.sh: $tool not found (apt-get install dpkg-dev binutils)" >&2
        exit 1
    }
done

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
[ -n "$version" ] && [ -n "$multiarch" ] || { echo "build-deb.sh: no version or multiarch" >&2; exit 1; }
# File times and the archives' own: the last commit's (reproducible builds).
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

if [ "${SKIP_BUILD:-0}" != 1 ]; then
    cargo build --release -p rrdscale
    bash scripts/build-librrd.sh
fi
bin=target/release/rrdscale
lib=target/release/librrd.so
[ -x "$bin" ] && [ -f "$lib" ] || { echo "build-deb.sh: build $bin and $lib first" >&2; exit 1; }

out=target/debian
stage=$out/stage
rm -rf "$stage"
rm -f "$out"/*.deb "$out"/*.ddeb
mkdir -p "$stage"
P=$stage/rrdscale
L=$stage/librrd8-rrdscale

# install_elf SRC DEST_IN_PACKAGE PKGDIR DBGDIR MODE: the stripped file into
# the package, its debug info into the dbgsym package under its build id.
build_ids=()
install_elf() {
    local src=$1 dest=$2 pkg=$3 dbg=$4 mode=$5
    local id
    id=$(readelf -n "$src" | sed -n 's/^ *Build ID: *\([0-9a-f]*\)$/\1/p' | head -n 1)
    [ -n "$id" ] || { echo "build-deb.sh: $src has no build id" >&2; exit 1; }
    local debug=$dbg/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
    install -d "$(dirname "$pkg$dest")" "$(dirname "$debug")"
    objcopy --only-keep-debug --compress-debug-sections "$src" "$debug"
    chmod 0644 "$debug"
    # As dh_strip: executables keep their dynamic symbols only; libraries
    # lose what no other object needs.
    if [ "$mode" = lib ]; then
        strip --remove-section=.comment --remove-section=.note --strip-unneeded -o "$pkg$dest" "$src"
        chmod 0644 "$pkg$dest"
    else
        strip --remove-section=.comment --remove-section=.note -o "$pkg$dest" "$src"
        chmod 0755 "$pkg$dest"
    fi
    objcopy --add-gnu-debuglink="$debug" "$pkg$dest"
    build_ids+=("$id")
}

# --- rrdscale ------------------------------------------------------------------
install_elf "$bin" /usr/bin/rrdscale "$P" "$stage/rrdscale-dbgsym" exe
rrdscale_ids=("${build_ids[@]}")
build_ids=()
install -D -m 0755 packaging/deb/rrdscale-switch "$P/usr/sbin/rrdscale-switch"
sed -i "s|@MULTIARCH@|$multiarch|g" "$P/usr/sbin/rrdscale-switch"
install -D -m 0755 packaging/deb/rrdcached-service "$P/usr/lib/rrdscale/rrdcached-service"
# The names of Debian's programs, for a PATH that lists this directory first.
install -d "$P/usr/lib/rrdscale/bin"
for name in rrdtool rrdupdate rrdcreate rrdinfo rrdcached; do
    ln -s ../../../bin/rrdscale "$P/usr/lib/rrdscale/bin/$name"
done
# Where rrdscale-switch moves Debian's files (dpkg-divert --rename): owned by
# the package, so that dpkg removes them with it.
install -d "$P/usr/lib/rrdscale/debian/bin" "$P/usr/lib/rrdscale/debian/lib"
install -D -m 0644 packaging/deb/rrdscale.service "$P/lib/systemd/system/rrdscale.service"
install -D -m 0644 packaging/deb/rrdscale.socket "$P/lib/systemd/system/rrdscale.socket"
install -D -m 0644 packaging/deb/default-rrdscale "$P/etc/default/rrdscale"

# Man pages and completions, whatever generate-docs writes.
docs=$stage/generated-docs
if "$bin" generate-docs "$docs" >"$stage/generate-docs.log" 2>&1; then
    shopt -s nullglob
    n=0
    for page in "$docs"/man/*.[1-9]*; do
        section=${page##*.}
        section=${section:0:1}
        install -d "$P/usr/share/man/man$section"
        gzip -9nc "$page" >"$P/usr/share/man/man$section/$(basename "$page").gz"
        n=$((n + 1))
    done
    [ $n -gt 0 ] || { echo "build-deb.sh: generate-docs wrote no man page" >&2; exit 1; }
    c=$docs/completions
    [ -f "$c/rrdscale.bash" ] && install -D -m 0644 "$c/rrdscale.bash" "$P/usr/share/bash-completion/completions/rrdscale"
    [ -f "$c/_rrdscale" ] && install -D -m 0644 "$c/_rrdscale" "$P/usr/share/zsh/vendor-completions/_rrdscale"
    [ -f "$c/rrdscale.fish" ] && install -D -m 0644 "$c/rrdscale.fish" "$P/usr/share/fish/vendor_completions.d/rrdscale.fish"
    shopt -u nullglob
    echo "build-deb.sh: $n man pages and $(find "$c" -type f 2>/dev/null | wc -l) completion files from generate-docs"
else
    msg="rrdscale generate-docs failed ($(head -c 200 "$stage/generate-docs.log" | tr '\n' ' '))"
    if [ "${RRDSCALE_DEB_ALLOW_NO_DOCS:-0}" != 1 ]; then
        echo "build-deb.sh: $msg (RRDSCALE_DEB_ALLOW_NO_DOCS=1 builds without man pages)" >&2
        exit 1
    fi
    {
        echo "################################################################"
        echo "# WARNING: $msg"
        echo "# The rrdscale package is built WITHOUT man pages and completions."
        echo "################################################################"
    } >&2
fi

install -d "$P/usr/share/doc/rrdscale"
# Uncompressed: the units' Documentation= and rrdscale-switch name it.
install -m 0644 docs/install.md "$P/usr/share/doc/rrdscale/install.md"
[ ! -f docs/systemd.md ] || install -m 0644 docs/systemd.md "$P/usr/share/doc/rrdscale/systemd.md"
gzip -9nc README.md >"$P/usr/share/doc/rrdscale/README.md.gz"

# --- librrd8-rrdscale ----------------------------------------------------------
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = librrd.so.8 ] || { echo "build-deb.sh: $lib has soname '$soname'" >&2; exit 1; }
install_elf "$lib" "/usr/lib/$multiarch/rrdscale/librrd.so.8" "$L" "$stage/librrd8-rrdscale-dbgsym" lib
librrd_ids=("${build_ids[@]}")
install -d "$L/usr/share/doc/librrd8-rrdscale"

# --- copyright, control files, archives -------------------------------------------
copyright() {
    cat <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: rrdscale
Comment: Built from the rrdscale workspace; see /usr/share/doc/rrdscale.

Files: *
Copyright: the rrdscale contributors
License: MIT or Apache-2.0
 Either license, at your option. Debian systems carry the Apache License
 2.0 in /usr/share/common-licenses/Apache-2.0; the MIT license's text is in
 rrdscale's source.
EOF
}
copyright >"$P/usr/share/doc/rrdscale/copyright"
copyright >"$L/usr/share/doc/librrd8-rrdscale/copyright"

# Depends of the ELF files, as dpkg-shlibdeps works them out (it wants a
# debian/control next to it).
shlibdeps() {
    local tmp
    tmp=$(mktemp -d)
    mkdir -p "$tmp/debian"
    printf 'Source: rrdscale\n\nPackage: rrdscale\nArchitecture: any\n' >"$tmp/debian/control"
    local args=()
    for f in "$@"; do args+=(-e "$root/$f"); done
    (cd "$tmp" && dpkg-shlibdeps -O "${args[@]}" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'
    rm -rf "$tmp"
}

# control PKGDIR TEMPLATE DEPENDS
control() {
    local dir=$1 template=$2 depends=$3
    install -d -m 0755 "$dir/DEBIAN"
    local size
    size=$(du -sk --exclude=DEBIAN "$dir" | cut -f1)
    sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@SIZE@|$size|" \
        -e "s|@DEPENDS@|$depends|" -e "s|@MULTIARCH@|$multiarch|g" "$template" >"$dir/DEBIAN/control"
}

control "$P" packaging/deb/rrdscale.DEBIAN/control "$(shlibdeps "$P/usr/bin/rrdscale")"
for f in postinst prerm postrm conffiles; do
    install -m "$([ $f = conffiles ] && echo 0644 || echo 0755)" "packaging/deb/rrdscale.DEBIAN/$f" "$P/DEBIAN/$f"
done
control "$L" packaging/deb/librrd8-rrdscale.DEBIAN/control "$(shlibdeps "$L/usr/lib/$multiarch/rrdscale/librrd.so.8")"
install -m 0755 packaging/deb/librrd8-rrdscale.DEBIAN/prerm "$L/DEBIAN/prerm"

# dbgsym PKG IDS...: the debug package of PKG, as debhelper makes them.
dbgsym() {
    local pkg=$1
    shift
    local dir=$stage/$pkg-dbgsym
    install -d "$dir/usr/share/doc"
    ln -s "$pkg" "$dir/usr/share/doc/$pkg-dbgsym"
    install -d -m 0755 "$dir/DEBIAN"
    cat >"$dir/DEBIAN/control" <<EOF
Package: $pkg-dbgsym
Source: rrdscale
Version: $version
Auto-Built-Package: debug-symbols
Architecture: $arch
Maintainer: rrdscale contributors <rrdscale@localhost>
Installed-Size: $(du -sk --exclude=DEBIAN "$dir" | cut -f1)
Depends: $pkg (= $version)
Section: debug
Priority: optional
Description: debug symbols for $pkg
Build-Ids: $*
EOF
}
dbgsym rrdscale "${rrdscale_ids[@]}"
dbgsym librrd8-rrdscale "${librrd_ids[@]}"

# Permissions as a package's: directories 0755, files 0644 unless executable.
find "$stage" -path "$docs" -prune -o -type d -exec chmod 0755 {} +

for pkg in rrdscale librrd8-rrdscale; do
    dpkg-deb --root-owner-group -Zxz --build "$stage/$pkg" "$out/${pkg}_${version}_${arch}.deb" >/dev/null
    dpkg-deb --root-owner-group -Zxz --build "$stage/$pkg-dbgsym" "$out/${pkg}-dbgsym_${version}_${arch}.ddeb" >/dev/null
done

echo "build-deb.sh: built in $out:"
for f in "$out"/*.deb "$out"/*.ddeb; do
    printf '  %-45s %8s bytes\n' "$(basename "$f")" "$(stat -c %s "$f")"
done
printf '  shipped /usr/bin/rrdscale: %s bytes; librrd.so.8: %s bytes\n' \
    "$(stat -c %s "$P/usr/bin/rrdscale")" "$(stat -c %s "$L/usr/lib/$multiarch/rrdscale/librrd.so.8")"
