// Ready-to-paste configuration for each inbound token kind, built with this server's address
// and the new token: the Jenkins Notification plugin, GitHub Actions, GitLab CI, an
// Alertmanager receiver and plain curl.

function jenkins(base, token) {
  const address = `${base}/api/v1/jenkins/notify?token=${token}`;
  return [{ title: "Jenkins Notification plugin", key: "jenkins", copy: "Copy URL", intro:
    "In the job's configuration, Job Notifications → Add Endpoint: Format JSON, Protocol HTTP, Event All Events, and this URL. Keep it in a Jenkins credential: it holds the token.",
  code: address }];
}

function deployments(base, token) {
  const address = `${base}/api/v1/deployments/webhook`;
  const github = `# Repository secret LOOKOUT_DEPLOYMENTS_TOKEN = ${token}
      - name: Report the deployment to Lookout
        if: always()
        run: |
          status=$([ "\${{ job.status }}" = "success" ] && echo succeeded || echo failed)
          curl -fsS -X POST ${address} \\
            -H "X-Lookout-Token: \${{ secrets.LOOKOUT_DEPLOYMENTS_TOKEN }}" -H "Content-Type: application/json" \\
            -d "{\\"service\\":\\"checkout\\",\\"environment\\":\\"production\\",\\"version\\":\\"\${{ github.ref_name }}\\",\\"status\\":\\"$status\\",\\"commit\\":\\"\${{ github.sha }}\\",\\"external_id\\":\\"gha-\${{ github.run_id }}\\"}"`;
  const gitlab = `# Masked CI/CD variable LOOKOUT_DEPLOYMENTS_TOKEN = ${token}
deploy:
  stage: deploy
  environment: production
  script:
    - ./deploy.sh
  after_script:
    - status=$([ "$CI_JOB_STATUS" = "success" ] && echo succeeded || echo failed)
    - >-
      curl -fsS -X POST ${address}
      -H "X-Lookout-Token: $LOOKOUT_DEPLOYMENTS_TOKEN" -H "Content-Type: application/json"
      -d "{\\"service\\":\\"$CI_PROJECT_NAME\\",\\"environment\\":\\"$CI_ENVIRONMENT_NAME\\",\\"version\\":\\"$CI_COMMIT_SHORT_SHA\\",\\"status\\":\\"$status\\",\\"commit\\":\\"$CI_COMMIT_SHA\\",\\"url\\":\\"$CI_JOB_URL\\",\\"external_id\\":\\"gitlab-$CI_JOB_ID\\"}"`;
  const curl = `curl -fsS -X POST ${address} \\
  -H "X-Lookout-Token: ${token}" -H "Content-Type: application/json" \\
  -d '{"service":"checkout","environment":"production","version":"1.4.2","status":"succeeded","commit":"3f2a9c1"}'`;
  return [
    { title: "GitHub Actions step", key: "github", copy: "Copy step", intro: "The last step of the deploy job; add the token as the repository secret LOOKOUT_DEPLOYMENTS_TOKEN.", code: github },
    { title: "GitLab CI job", key: "gitlab", copy: "Copy job", intro: "Add the token as a masked CI/CD variable LOOKOUT_DEPLOYMENTS_TOKEN.", code: gitlab },
    { title: "Any other system", key: "curl", copy: "Copy command", intro: "Report started, then succeeded or failed; the same external_id updates the same deployment.", code: curl },
  ];
}

function alerts(base, token) {
  const address = `${base}/api/v1/alerts/webhook`;
  const alertmanager = `# alertmanager.yml
route:
  receiver: lookout
receivers:
  - name: lookout
    webhook_configs:
      - url: ${address}?token=${token}
        send_resolved: true`;
  const curl = `curl -fsS -X POST ${address} \\
  -H "X-Lookout-Token: ${token}" -H "Content-Type: application/json" \\
  -d '{"title":"Disk 95% full","severity":"warning","service":"db","status":"firing","dedup_key":"db-disk"}'`;
  return [
    { title: "Alertmanager receiver", key: "alertmanager", copy: "Copy receiver", intro: "Alertmanager cannot set headers, so the token travels in the URL (url_file keeps it out of the file).", code: alertmanager },
    { title: "Any other monitoring tool", key: "curl", copy: "Copy command", intro: "Send firing, then resolved with the same dedup_key.", code: curl },
  ];
}

/** The snippets for a token of `kind`: [{title, key, copy (the button's words), intro, code}]. */
export function snippetsFor(kind, base, token) {
  const build = { jenkins, deployments, alerts }[kind];
  return build ? build(base, token) : [];
}
