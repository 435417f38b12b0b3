#!/bin/sh
# SPDX-License-Identifier: MIT
# Generates this run's test PKI into DIR (created if missing), with openssl:
#   ca.crt/ca.key              the CA clients trust
#   server.crt/.key            CN=localhost, SAN DNS:localhost, IP:127.0.0.1, signed by ca
#   wronghost.crt/.key         CN/SAN wrong.example.invalid, signed by ca
#   expired.crt/.key           localhost, valid only 2020-01-01..2020-01-02, signed by ca
#   other-ca.crt/.key          a second, unrelated CA
#   othersrv.crt/.key          localhost, signed by other-ca
#   client.crt/.key            CN=elk-client, clientAuth, signed by ca
#   other-client.crt/.key      CN=elk-client, clientAuth, signed by other-ca
# Keys are EC P-256 (fast to make, supported by mbedTLS and redis' OpenSSL).
# Usage: gen-certs.sh DIR
set -eu
dir=${1:?usage: gen-certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
umask 077

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

ca() { # name CN
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -sha256 -days 30 -subj "/O=edgelock test/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$1.crt"
}

# leaf name ca CN SAN EKU [startdate enddate]
leaf() {
  name=$1 signer=$2 cn=$3 san=$4 eku=$5
  key "$name.key"
  openssl req -new -key "$name.key" -subj "/O=edgelock test/CN=$cn" -out "$name.csr"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    [ -n "$san" ] && echo "subjectAltName=$san"
  } > "$name.ext"
  if [ $# -ge 7 ]; then
    # 'openssl x509 -req' cannot back-date; 'openssl ca' can, with a throwaway database.
    mkdir -p "ca-$name"
    : > "ca-$name/index.txt"
    cat > "ca-$name/ca.cnf" <<CNF
[ ca ]
default_ca = d
[ d ]
database = ca-$name/index.txt
new_certs_dir = ca-$name
serial = ca-$name/serial
default_md = sha256
policy = p
unique_subject = no
copy_extensions = none
[ p ]
commonName = supplied
organizationName = optional
CNF
    openssl rand -hex 8 > "ca-$name/serial"
    openssl ca -batch -notext -config "ca-$name/ca.cnf" -cert "$signer.crt" -keyfile "$signer.key" \
      -startdate "$6" -enddate "$7" -extfile "$name.ext" -in "$name.csr" -out "$name.crt" 2>/dev/null
    rm -rf "ca-$name"
  else
    openssl x509 -req -in "$name.csr" -CA "$signer.crt" -CAkey "$signer.key" -CAcreateserial \
      -days 30 -sha256 -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  fi
  rm -f "$name.csr" "$name.ext"
}

ca ca "edgelock test CA"
ca other-ca "edgelock other CA"
leaf server ca localhost "DNS:localhost,IP:127.0.0.1" serverAuth
leaf wronghost ca wrong.example.invalid "DNS:wrong.example.invalid" serverAuth
leaf expired ca localhost "DNS:localhost,IP:127.0.0.1" serverAuth 20200101000000Z 20200102000000Z
leaf othersrv other-ca localhost "DNS:localhost,IP:127.0.0.1" serverAuth
leaf client ca elk-client "" clientAuth
leaf other-client other-ca elk-client "" clientAuth
rm -f ./*.srl
# redis-server runs as this user and must read them; nothing here is a real secret.
chmod 644 ./*.crt ./*.key
echo "gen-certs: certificates in $dir"
