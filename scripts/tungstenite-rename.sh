# shellcheck shell=bash
# The rename that ports a program from tungstenite to lockgate, shared by
# scripts/port-tungstenite.sh and scripts/framework-suites.sh (source this
# file). A plain, case-sensitive search-and-replace over the whole text, in
# this order (the second pattern is a substring of the first):
#
#   tokio_tungstenite  ->  tokio_lockgate
#   tungstenite        ->  lockgate       (also turns tokio-tungstenite into tokio-lockgate)
tungstenite_rename() { # tungstenite_rename < upstream > ported
    sed -e 's/tokio_tungstenite/tokio_lockgate/g' -e 's/tungstenite/lockgate/g'
}
