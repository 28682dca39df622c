//! A hand-made TLS ClientHello, for tests of what a listener refuses at the handshake.

/// A ClientHello offering only `version` (e.g. `[3, 2]`, TLS 1.1; no supported_versions
/// extension). It also offers a suite and the signature_algorithms extension rustls needs, so
/// the only reason to refuse it is the protocol version. (A real TLS 1.1 client sends no
/// signature_algorithms and is refused even earlier, with handshake_failure.)
pub fn client_hello(version: [u8; 2]) -> Vec<u8> {
    let mut hello = version.to_vec();
    hello.extend([0x42; 32]); // random
    hello.push(0); // no session id
    // ECDHE_ECDSA_AES_128_GCM_SHA256, ECDHE_ECDSA_AES_128_CBC_SHA, RSA_AES_128_CBC_SHA
    let suites: [u8; 6] = [0xc0, 0x2b, 0xc0, 0x09, 0x00, 0x2f];
    hello.extend((suites.len() as u16).to_be_bytes());
    hello.extend(suites);
    hello.extend([1, 0]); // compression: null only
    // extensions: signature_algorithms = [ecdsa_secp256r1_sha256, rsa_pkcs1_sha256]
    hello.extend([
        0x00, 0x0a, 0x00, 0x0d, 0x00, 0x06, 0x00, 0x04, 0x04, 0x03, 0x04, 0x01,
    ]);

    let mut handshake = vec![0x01]; // ClientHello
    handshake.extend(&(hello.len() as u32).to_be_bytes()[1..]);
    handshake.extend(hello);

    let mut record = vec![0x16, 0x03, 0x01]; // handshake record, TLS 1.0 record layer
    record.extend((handshake.len() as u16).to_be_bytes());
    record.extend(handshake);
    record
}
