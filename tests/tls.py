"""Self-signed certificates for TLS tests (a CA, a server certificate for 127.0.0.1, a client)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass
class TlsFiles:
    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def make_tls_files(folder: Path) -> TlsFiles:
    """Create a CA and server/client certificates signed by it, as PEM files in ``folder``."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("test-ca"))
        .issuer_name(_name("test-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )

    def issue(
        common: str, usage: x509.ObjectIdentifier, san: bool
    ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if san:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
        return builder.sign(ca_key, hashes.SHA256()), key

    server_cert, server_key = issue("localhost", ExtendedKeyUsageOID.SERVER_AUTH, True)
    client_cert, client_key = issue("client", ExtendedKeyUsageOID.CLIENT_AUTH, False)
    files = TlsFiles(
        folder / "ca.pem",
        folder / "server.pem",
        folder / "server.key",
        folder / "client.pem",
        folder / "client.key",
    )
    pem = serialization.Encoding.PEM
    files.ca_cert.write_bytes(ca_cert.public_bytes(pem))
    files.server_cert.write_bytes(server_cert.public_bytes(pem))
    files.client_cert.write_bytes(client_cert.public_bytes(pem))
    _write_key(server_key, files.server_key)
    _write_key(client_key, files.client_key)
    return files
