# Sourced by the scripts that build a real client from Debian's source
# package (tests/ompi/build_coll_ucc.sh, tests/torch/build_pg_ucc.sh).
#
#   deb_source WORK PACKAGE VERSION
#
# Downloads PACKAGE=VERSION's source files into WORK with apt-get source,
# through deb-src twins of the machine's own Debian sources kept in
# WORK/apt, so that the machine's apt setup is untouched. Succeeds when the
# upstream (orig) tarball arrived, even where another part of the package
# did not (the registry has answered 404 for pytorch's debian.tar.xz): the
# clients here are built from the upstream files alone. Returns 1 with the
# log in WORK/apt.log otherwise.
deb_source() {
  local work=$1 pkg=$2 ver=$3
  local apt="$work/apt" upstream=${3%-*}
  upstream=${upstream#*:}
  mkdir -p "$apt/lists/partial" "$apt/sources.list.d" "$apt/archives/partial"
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -e "$f" ] || continue
    sed -e 's/^Types:.*deb\b.*/Types: deb-src/' "$f" >"$apt/sources.list.d/$(basename "$f")"
  done
  if [ -e /etc/apt/sources.list ]; then
    sed -n -e 's/^deb /deb-src /p' /etc/apt/sources.list >"$apt/sources.list.d/list.list"
  fi
  local opts=(-o "Dir::Etc::SourceList=/dev/null"
              -o "Dir::Etc::SourceParts=$apt/sources.list.d"
              -o "Dir::State::Lists=$apt/lists"
              -o "Dir::Cache::Archives=$apt/archives"
              -o "APT::Sandbox::User=root")
  apt-get "${opts[@]}" -qq update >"$work/apt.log" 2>&1 || return 1
  (cd "$work" && apt-get "${opts[@]}" -qq source --download-only "$pkg=$ver") \
    >>"$work/apt.log" 2>&1 || true
  ls "$work/${pkg}_${upstream}".orig.tar.* >/dev/null 2>&1
}
