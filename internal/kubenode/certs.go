package kubenode

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the cluster's self-made certificate authority, the API server's
// serving certificate (signed by it) and the service-account signing key.
type pki struct {
	caCert, apiCert, apiKey, saKey, saPub string // file paths
	caPEM                                 []byte
}

// newPKI writes the files of a fresh pki into dir. The API server's
// certificate names apiIPs and the in-cluster DNS names of the kubernetes
// Service; everything is valid for a day.
func newPKI(dir string, apiIPs []net.IP) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{caCert: filepath.Join(dir, "ca.crt"), apiCert: filepath.Join(dir, "apiserver.crt"),
		apiKey: filepath.Join(dir, "apiserver.key"), saKey: filepath.Join(dir, "sa.key"), saPub: filepath.Join(dir, "sa.pub")}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fiomig-kubenode-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})

	apiKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	apiTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: append([]net.IP{net.ParseIP("127.0.0.1")}, apiIPs...),
		DNSNames:    []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"}}
	apiDER, err := x509.CreateCertificate(rand.Reader, apiTmpl, ca, &apiKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	for path, block := range map[string]*pem.Block{
		p.caCert:  {Type: "CERTIFICATE", Bytes: caDER},
		p.apiCert: {Type: "CERTIFICATE", Bytes: apiDER},
		p.apiKey:  ecKeyBlock(apiKey),
		p.saKey:   ecKeyBlock(saKey),
		p.saPub:   pubKeyBlock(&saKey.PublicKey),
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func ecKeyBlock(k *ecdsa.PrivateKey) *pem.Block {
	der, _ := x509.MarshalECPrivateKey(k)
	return &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}
}

func pubKeyBlock(k *ecdsa.PublicKey) *pem.Block {
	der, _ := x509.MarshalPKIXPublicKey(k)
	return &pem.Block{Type: "PUBLIC KEY", Bytes: der}
}

// token is a random bearer token (hex).
func token() string {
	b := make([]byte, 16)
	rand.Read(b)
	const hex = "0123456789abcdef"
	out := make([]byte, 32)
	for i, c := range b {
		out[2*i], out[2*i+1] = hex[c>>4], hex[c&15]
	}
	return string(out)
}
