//! Debian's nginx as a TLS-terminating reverse proxy in front of the simulator: certificates
//! made at test time with rcgen, a configuration written into a temporary directory (pid, logs
//! and temp files inside it, loopback only, free ports), one foreground process killed on drop.
//!
//! A test calls [`find_nginx`]; when nginx is missing it prints one `skipped:` line and the
//! test returns; with `CI` set it panics instead (`.ci/run` installs it), as the real-engine
//! tests do.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

use crate::real_support::free_port;

/// How long nginx may take to accept connections.
const START_DEADLINE: Duration = Duration::from_secs(20);

/// The nginx binary (`PATH`, then `/usr/sbin`), or `None` after printing why; panics with
/// `CI` set.
pub fn find_nginx(what: &str) -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join("nginx"));
    if let Some(found) = on_path
        .chain([PathBuf::from("/usr/sbin/nginx")])
        .find(|p| p.is_file())
    {
        return Some(found);
    }
    let message = format!("skipped: {what} needs nginx; install Debian's `nginx` package");
    assert!(
        std::env::var_os("CI").is_none(),
        "{message} (CI is set, so this test must run)"
    );
    println!("{message}");
    None
}

/// A test CA, a server certificate for 127.0.0.1 and localhost, and a client certificate,
/// as PEM files in `dir`.
pub struct TestPki {
    pub ca_cert: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

impl TestPki {
    pub fn generate(dir: &Path) -> TestPki {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "servebench test CA");
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
        let leaf = |names: Vec<String>, usage: ExtendedKeyUsagePurpose, cn: &str| {
            let key = KeyPair::generate().expect("leaf key");
            let mut params = CertificateParams::new(names).expect("leaf params");
            params.distinguished_name.push(DnType::CommonName, cn);
            params.extended_key_usages = vec![usage];
            let cert = params
                .signed_by(&key, &ca, &ca_key)
                .expect("leaf certificate");
            (cert.pem(), key.serialize_pem())
        };
        let (server_pem, server_key) = leaf(
            vec!["127.0.0.1".into(), "localhost".into()],
            ExtendedKeyUsagePurpose::ServerAuth,
            "localhost",
        );
        let (client_pem, client_key) = leaf(
            Vec::new(),
            ExtendedKeyUsagePurpose::ClientAuth,
            "bench client",
        );
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).expect("write PEM");
            path
        };
        TestPki {
            ca_cert: write("ca.pem", &ca.pem()),
            server_cert: write("server.pem", &server_pem),
            server_key: write("server.key", &server_key),
            client_cert: write("client.pem", &client_pem),
            client_key: write("client.key", &client_key),
        }
    }
}

/// One `server` block: TLS on a free loopback port, proxying to the simulator.
#[derive(Debug, Clone, Default)]
pub struct Site {
    /// `proxy_buffering on` (nginx's default) instead of off.
    pub buffering: bool,
    /// `ssl_verify_client on` against the test CA.
    pub verify_client: bool,
    /// Answer 401 unless this header carries this value.
    pub require_header: Option<(String, String)>,
    /// Offer HTTP/2 (ALPN `h2`) as well as HTTP/1.1.
    pub http2: bool,
}

/// A running nginx; killed on drop.
pub struct Nginx {
    child: Child,
    /// Each site's port, in the order given.
    pub ports: Vec<u16>,
    dir: PathBuf,
}

impl Nginx {
    /// Start `binary` with `sites` in front of `upstream`, files in `dir`.
    pub fn start(
        binary: &Path,
        dir: &Path,
        pki: &TestPki,
        upstream: SocketAddr,
        sites: &[Site],
    ) -> Nginx {
        let ports: Vec<u16> = sites.iter().map(|_| free_port()).collect();
        let conf = dir.join("nginx.conf");
        std::fs::write(&conf, config(dir, pki, upstream, sites, &ports)).expect("write conf");
        let child = Command::new(binary)
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(&conf)
            .arg("-e")
            .arg(dir.join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        let mut nginx = Nginx {
            child,
            ports,
            dir: dir.to_path_buf(),
        };
        nginx.wait_until_accepting();
        nginx
    }

    fn wait_until_accepting(&mut self) {
        let deadline = Instant::now() + START_DEADLINE;
        for &port in &self.ports.clone() {
            loop {
                if let Ok(Some(status)) = self.child.try_wait() {
                    panic!("nginx exited ({status}): {}", self.error_log());
                }
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "nginx did not accept on {port}: {}",
                    self.error_log()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One foreground process (`master_process off`), everything it writes inside `dir`.
fn config(
    dir: &Path,
    pki: &TestPki,
    upstream: SocketAddr,
    sites: &[Site],
    ports: &[u16],
) -> String {
    let d = dir.display();
    let mut conf = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
         error_log {d}/error.log warn;\nevents {{ worker_connections 256; }}\nhttp {{\n\
         access_log off;\nclient_body_temp_path {d}/client_body;\nproxy_temp_path {d}/proxy;\n\
         fastcgi_temp_path {d}/fastcgi;\nuwsgi_temp_path {d}/uwsgi;\nscgi_temp_path {d}/scgi;\n"
    );
    for (site, port) in sites.iter().zip(ports) {
        let _ = write!(
            conf,
            "server {{\n listen 127.0.0.1:{port} ssl{};\n ssl_certificate {};\n \
             ssl_certificate_key {};\n",
            if site.http2 { " http2" } else { "" },
            pki.server_cert.display(),
            pki.server_key.display()
        );
        if site.verify_client {
            let _ = write!(
                conf,
                " ssl_client_certificate {};\n ssl_verify_client on;\n",
                pki.ca_cert.display()
            );
        }
        if let Some((name, value)) = &site.require_header {
            let var = name.to_ascii_lowercase().replace('-', "_");
            let _ = writeln!(conf, " if ($http_{var} != \"{value}\") {{ return 401; }}");
        }
        let _ = write!(
            conf,
            " location / {{\n  proxy_pass http://{upstream};\n  proxy_http_version 1.1;\n  \
             proxy_set_header Connection \"\";\n  proxy_buffering {};\n }}\n}}\n",
            if site.buffering { "on" } else { "off" }
        );
    }
    conf.push_str("}\n");
    conf
}
