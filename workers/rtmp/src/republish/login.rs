//! Opening a push's connection: TCP or TLS, handshake and `connect`, answering the
//! destination's authentication challenge with new connections as the scheme requires
//! (each challenge step is a fresh connection, as with every RTMP server).

use crate::client::auth::Login;
use crate::client::error::ClientError;
use crate::client::session::{RtmpClient, Setup};
use crate::republish::destination::Destination;
use strom_ipc::rules::RepublishRule;

/// Connect attempts per login at most: identify, answer, and one `need auth` detour.
const MAX_ATTEMPTS: usize = 4;

/// A connection to `destination` whose `connect` was accepted.
pub async fn connect(
    destination: &Destination,
    rule: &RepublishRule,
    setup: &Setup,
) -> Result<RtmpClient, ClientError> {
    let mut login = Login::new(
        rule.auth_schema,
        &rule.dest_login,
        &rule.dest_password,
        &destination.app,
    );
    let mut auth = login.as_ref().map(Login::first_query);
    for _ in 0..MAX_ATTEMPTS {
        let app = destination.connect_app(auth.as_deref());
        let tc_url = destination.endpoint.tc_url(&app);
        let mut client = RtmpClient::open(&destination.endpoint, tc_url, setup.clone()).await?;
        match client.connect(&app).await {
            Ok(()) => return Ok(client),
            Err(ClientError::Rejected(description)) => {
                client.close().await;
                let Some(login) = login.as_mut() else {
                    if description.contains("authmod=") {
                        return Err(ClientError::AuthFailed(format!(
                            "the destination asks for credentials, the rule sends none (auth_schema {}, dest_login {:?}): {description}",
                            rule.auth_schema.as_str(),
                            rule.dest_login
                        )));
                    }
                    return Err(ClientError::Rejected(description));
                };
                auth = Some(
                    login
                        .on_rejection(&description)
                        .map_err(ClientError::AuthFailed)?,
                );
                tracing::debug!(rule = %rule.id, dest = %destination.endpoint, "answering the destination's authentication challenge");
            }
            Err(e) => return Err(e),
        }
    }
    Err(ClientError::AuthFailed(format!(
        "still challenged after {MAX_ATTEMPTS} connects"
    )))
}
